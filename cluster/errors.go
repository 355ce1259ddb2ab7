package cluster

import (
	"errors"
	"fmt"
)

var (
	// ErrBinaryNotFound means redis-server or redis-sentinel is not on PATH.
	ErrBinaryNotFound = errors.New("cluster: redis binary not found")
	// ErrNotReady means a node started but did not answer PING in time.
	ErrNotReady = errors.New("cluster: node did not become ready")
	// ErrNoSuchNode means a topology has no node of that name.
	ErrNoSuchNode = errors.New("cluster: no such node")
	// ErrNoFailover means the sentinels did not promote a new master in time.
	ErrNoFailover = errors.New("cluster: failover did not complete")
	// ErrClosed means the cluster was already closed.
	ErrClosed = errors.New("cluster: closed")
	// ErrNotRunning means a signal was sent to a node that is not running.
	ErrNotRunning = errors.New("cluster: process not running")
	// ErrNoProcess means a process fault was applied to a node without a
	// process, such as a service added with [Cluster.AddProxy].
	ErrNoProcess = errors.New("cluster: node has no process")
	// ErrNoLink means a network fault named a link the node does not have,
	// such as the replication link of a master.
	ErrNoLink = errors.New("cluster: node has no such link")
	// ErrNoClock means a clock fault was applied to a process started without
	// the clock shim (see [ProcessBackend.ClockShim]).
	ErrNoClock = errors.New("cluster: node has no clock shim")
	// ErrNoPowerLoss means a power loss was asked of a node whose data is
	// not on a lazy disk (see [NewDisk]), or a lazy disk cannot be mounted.
	ErrNoPowerLoss = errors.New("cluster: node cannot lose power")
	// ErrNoCompiler means gcc, needed by [BuildClockShim], is not on PATH.
	ErrNoCompiler = errors.New("cluster: gcc not found")
	// ErrBadTopology means a [Topology] asks for something impossible.
	ErrBadTopology = errors.New("cluster: bad topology")
	// ErrBadFault means a fault's parameters are invalid.
	ErrBadFault = errors.New("cluster: bad fault parameters")
	// ErrNoClockShim means the clock shim could not be injected into a node
	// of a user-supplied image; the message says why.
	ErrNoClockShim = fmt.Errorf("%w: cannot inject it into the image", ErrNoClock)
)

// A StartError reports a node that failed to start, with the log to read.
type StartError struct {
	Node    string
	LogPath string
	Err     error
	// LogTail holds the last lines of the log, often the reason itself.
	LogTail string
}

func (e *StartError) Error() string {
	s := fmt.Sprintf("cluster: start %s: %v (log: %s)", e.Node, e.Err, e.LogPath)
	if e.LogTail != "" {
		s += "\n" + e.LogTail
	}
	return s
}

func (e *StartError) Unwrap() error { return e.Err }
