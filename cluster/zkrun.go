package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// A ZooKeeperBackend is a [Backend] that runs ZooKeeper members too:
// [Start] asks it for one [MemberPlace] per member of a topology with
// ZooKeeper set. The process backend is one (members are child JVMs of
// this process), and so is package dockerbackend's (members are
// containers).
type ZooKeeperBackend interface {
	Backend
	// ZooKeeperPlace returns where member name keeps its files and what
	// runs its JVM (Run gets the JVM's options, the class path of
	// [ZooKeeperJars], the main class and the configuration file). It
	// returns [ErrBinaryNotFound] without java or the jars.
	ZooKeeperPlace(ctx context.Context, name string) (MemberPlace, error)
}

var (
	_ EtcdBackend      = (*ProcessBackend)(nil)
	_ ZooKeeperBackend = (*ProcessBackend)(nil)
)

// ZooKeeperPlace makes member name a child JVM of this one, in Dir/name,
// logging to Dir/name.log; with a ClockShim, the JVM runs under it, its
// clock file Dir/name/clock. HotSpot reads System.currentTimeMillis (and
// java.util.Date) through libc's clock_gettime(CLOCK_REALTIME) and
// System.nanoTime through clock_gettime(CLOCK_MONOTONIC), so the shim
// reaches both.
func (b *ProcessBackend) ZooKeeperPlace(ctx context.Context, name string) (MemberPlace, error) {
	java, err := javaBin()
	if err != nil {
		return MemberPlace{}, err
	}
	if j := zkJarsMissing(); j != "" {
		return MemberPlace{}, fmt.Errorf("%w: %s (apt-get install zookeeper)", ErrBinaryNotFound, j)
	}
	pl := MemberPlace{Dir: filepath.Join(b.Dir, name), LogPath: filepath.Join(b.Dir, name+".log"),
		StartTimeout: b.StartTimeout, LazyDisk: b.LazyDisks}
	env := zkEnv()
	if b.ClockShim != "" {
		if err := os.MkdirAll(pl.Dir, 0o755); err != nil {
			return MemberPlace{}, err
		}
		if pl.Clock, err = NewClock(filepath.Join(pl.Dir, "clock")); err != nil {
			return MemberPlace{}, err
		}
		pl.ClockShim = b.ClockShim
		env = clockEnv(env, b.ClockShim, pl.Clock)
	}
	pl.Runner = &procRunner{bin: java, dir: pl.Dir, logPath: pl.LogPath, env: env}
	return pl, nil
}
