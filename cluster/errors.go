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
)

// A StartError reports a node that failed to start, with the log to read.
type StartError struct {
	Node    string
	LogPath string
	Err     error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("cluster: start %s: %v (log: %s)", e.Node, e.Err, e.LogPath)
}

func (e *StartError) Unwrap() error { return e.Err }
