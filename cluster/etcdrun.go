package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// An EtcdBackend is a [Backend] that runs etcd members too: [Start] asks
// it for one [MemberPlace] per member of a topology with Etcd set. The
// process backend is one (members are children of this process), and so
// is package dockerbackend's (members are containers).
type EtcdBackend interface {
	Backend
	// EtcdPlace returns where member name keeps its files and what runs
	// its etcd process (Run gets etcd's flags). It returns
	// [ErrBinaryNotFound] without etcd.
	EtcdPlace(ctx context.Context, name string) (MemberPlace, error)
}

// EtcdPlace makes member name a child process of this one, in Dir/name,
// logging to Dir/name.log.
func (b *ProcessBackend) EtcdPlace(ctx context.Context, name string) (MemberPlace, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return MemberPlace{}, fmt.Errorf("%w: etcd (apt-get install etcd-server)", ErrBinaryNotFound)
	}
	pl := MemberPlace{Dir: filepath.Join(b.Dir, name), LogPath: filepath.Join(b.Dir, name+".log"),
		StartTimeout: b.StartTimeout, LazyDisk: b.LazyDisks}
	// etcd reads ETCD_* variables as flags.
	pl.Runner = &procRunner{bin: bin, dir: pl.Dir, logPath: pl.LogPath, env: envWithout("ETCD_")}
	return pl, nil
}
