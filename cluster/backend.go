package cluster

import "context"

// A Backend launches Redis processes: real ones on this host ([ProcessBackend])
// or containers. Everything above it (proxies, topologies, faults) is shared.
type Backend interface {
	// Launch starts one process and returns once it answers PING. A process
	// that fails to start returns a *[StartError] naming its log.
	Launch(ctx context.Context, spec ProcSpec) (Proc, error)
	// Close stops every process the backend launched. It is idempotent.
	Close() error
}

// A ProcSpec describes one redis-server or redis-sentinel process.
type ProcSpec struct {
	// Name is the node's name in the topology, e.g. "n1" or "s2".
	Name string
	// Port is the port to listen on. default: a free loopback port.
	Port int
	// Sentinel starts redis-sentinel instead of redis-server.
	Sentinel bool
	// Config holds extra configuration lines, e.g. "appendonly yes".
	Config []string

	_ struct{} // disallow positional literals, for extensibility
}

// A Proc is one launched process. Its port survives Kill and Start, so
// proxies in front of it keep working across a restart.
type Proc interface {
	// Name returns the spec's name.
	Name() string
	// Addr returns host:port where the process listens, reachable from this host.
	Addr() string
	// LogPath returns the process's log file on this host.
	LogPath() string
	// Kill sends SIGKILL and waits for the process to exit. It is idempotent.
	Kill() error
	// Start starts a killed process again with the same port, config and data
	// directory, and waits until it answers PING.
	Start(ctx context.Context) error
	// Pause freezes the process (SIGSTOP); Resume thaws it (SIGCONT).
	Pause() error
	Resume() error
	// WipeData removes the process's persisted data; call it between Kill and Start.
	WipeData() error
}

// A ClockedProc is a [Proc] whose wall clock lockpick can move. The process
// backend's processes are ClockedProcs; Clock returns nil unless the backend
// was given a ClockShim.
type ClockedProc interface {
	Clock() *Clock
}

// A PIDProc is a [Proc] running on this host. PID returns 0 while the
// process is not running.
type PIDProc interface {
	PID() int
}

// A DurableProc is a [Proc] that keeps its data on a [Disk]; on a lazy
// disk, faults.PowerLossFault drops what it had not synced.
type DurableProc interface {
	Disk() *Disk
}
