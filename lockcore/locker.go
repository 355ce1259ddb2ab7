package lockcore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A Locker is what every lock in this package offers, so that a harness can
// drive any of them. Each holds at most one lease at a time.
type Locker interface {
	// Key returns the lock's key.
	Key() string
	// TryLock makes one attempt; it returns an error matching
	// [ErrNotAcquired] when the lock is held elsewhere.
	TryLock(ctx context.Context) (*Lease, error)
	// Lock waits for the lock until ctx ends.
	Lock(ctx context.Context) (*Lease, error)
	// Unlock releases the lock; [ErrReleased] without a lease.
	Unlock(ctx context.Context) error
	// Extend renews the current lease and moves its deadline.
	Extend(ctx context.Context) error
	// Lease returns the current lease, or nil.
	Lease() *Lease
	// Abandon forgets the lease without releasing it, as a crashed client
	// would, and stops any renewal.
	Abandon()
}

var (
	_ Locker = (*Mutex)(nil)
	_ Locker = (*Redlock)(nil)
	_ Locker = (*Reentrant)(nil)
	_ Locker = (*SetNXExpire)(nil)
	_ Locker = (*GetSetLock)(nil)
)

// retry calls try every delay until it succeeds, fails with something other
// than [ErrNotAcquired], or ctx ends. When ctx ends it returns an error
// matching ErrNotAcquired and ctx.Err() (and the last attempt's error, if
// ctx cut that attempt short).
func retry(ctx context.Context, delay time.Duration, try func(context.Context) (*Lease, error)) (*Lease, error) {
	var timer *time.Timer
	for {
		lease, err := try(ctx)
		if cerr := ctxErr(ctx); err != nil && cerr != nil {
			if errors.Is(err, ErrNotAcquired) {
				return nil, fmt.Errorf("%w: %w", err, cerr)
			}
			return nil, fmt.Errorf("%w: %w: %w", ErrNotAcquired, cerr, err)
		}
		if !errors.Is(err, ErrNotAcquired) {
			return lease, err
		}
		if timer == nil {
			timer = time.NewTimer(delay)
			defer timer.Stop()
		} else {
			timer.Reset(delay)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, ctx.Err())
		case <-timer.C:
		}
	}
}

// ctxErr is ctx.Err(), or [context.DeadlineExceeded] once ctx's deadline
// has passed: a socket deadline set from it fires as the context's own
// timer does, and a call it cut short may return before ctx.Err() is set.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}
