package lockcore

import (
	"errors"
	"fmt"
)

var (
	// ErrNotAcquired means the lock is held by someone else.
	ErrNotAcquired = errors.New("lockcore: lock not acquired")
	// ErrNotHeld means the caller's token no longer owns the key: it expired
	// or someone else now holds the lock.
	ErrNotHeld = errors.New("lockcore: lock not held")
	// ErrReleased means Unlock or Extend was called without a current lease.
	ErrReleased = errors.New("lockcore: lock already released")
	// ErrExpired means the lease's validity deadline passed, on the client's
	// clock, before the call could confirm it: the holder must assume someone
	// else may hold the lock.
	ErrExpired = errors.New("lockcore: lease expired")
	// ErrNotReplicated means the lock was taken on the master but fewer
	// replicas than [Options.WaitReplicas] acknowledged it in time, so it
	// was released again: a failover could have lost it.
	ErrNotReplicated = errors.New("lockcore: lock not acknowledged by enough replicas")
)

// An OpError is a failed call to Redis. Indeterminate is true when the
// command may have been applied (a timeout or a dropped connection after the
// request was written), so a history must record the outcome as unknown;
// [NewOpError] sets it by [MayHaveRun].
type OpError struct {
	Op            string
	Key           string
	Indeterminate bool
	Err           error
}

func (e *OpError) Error() string {
	s := fmt.Sprintf("lockcore: %s %q: %v", e.Op, e.Key, e.Err)
	if e.Indeterminate {
		s += " (outcome unknown)"
	}
	return s
}

func (e *OpError) Unwrap() error { return e.Err }
