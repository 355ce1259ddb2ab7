package cluster

import (
	"context"
	"fmt"
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
// logging to Dir/name.log.
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
	pl.Runner = &procRunner{bin: java, dir: pl.Dir, logPath: pl.LogPath, env: zkEnv()}
	return pl, nil
}
