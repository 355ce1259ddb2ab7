package cluster

import "fmt"

// Persistence is how a redis-server node keeps its data across a crash.
type Persistence string

const (
	// PersistNone keeps nothing: a node killed and restarted comes back empty.
	PersistNone Persistence = "none"
	// PersistAOFEverySec appends every write to the AOF and fsyncs once a
	// second: a kill -9 of the process loses nothing the kernel already has,
	// a host crash up to a second of writes.
	PersistAOFEverySec Persistence = "aof-everysec"
	// PersistNoFsync is for etcd members only: their disks acknowledge
	// fsync without making anything durable (as etcd's --unsafe-no-fsync,
	// which Debian's 3.4 lacks, would), so a power loss drops everything
	// written since the cluster became healthy (written back then).
	PersistNoFsync Persistence = "no-fsync"
	// PersistAOFAlways fsyncs the AOF before replying to each write.
	PersistAOFAlways Persistence = "aof-always"
)

// Config returns the redis.conf lines for p. The empty Persistence is
// [PersistNone]. It returns [ErrBadTopology] for an unknown mode.
func (p Persistence) Config() ([]string, error) {
	switch p {
	case "", PersistNone:
		return []string{"appendonly no", `save ""`}, nil
	case PersistAOFEverySec:
		return []string{"appendonly yes", "appendfsync everysec", `save ""`}, nil
	case PersistAOFAlways:
		return []string{"appendonly yes", "appendfsync always", `save ""`}, nil
	}
	if p == PersistNoFsync {
		return nil, fmt.Errorf("%w: persistence no-fsync is for etcd members", ErrBadTopology)
	}
	return nil, fmt.Errorf("%w: persistence %q (want none, aof-everysec or aof-always)", ErrBadTopology, string(p))
}
