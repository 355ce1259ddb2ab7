package etcdlock

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockpick/lockpick/lockcore"
)

var (
	// ErrNotAcquired means TryLock found the lock held by another session.
	// It matches [lockcore.ErrNotAcquired]: a definite refusal.
	ErrNotAcquired = fmt.Errorf("etcdlock: lock held by another session: %w", lockcore.ErrNotAcquired)
	// ErrSessionExpired means the session's lease ended while Lock waited,
	// so its key is gone and the lock was not acquired (the re-check etcd
	// added for etcd-io/etcd#11456). It matches [lockcore.ErrNotAcquired].
	ErrSessionExpired = fmt.Errorf("etcdlock: session expired while waiting: %w", lockcore.ErrNotAcquired)
	// ErrReleased means Unlock was called without a current grant. It
	// matches [lockcore.ErrReleased].
	ErrReleased = fmt.Errorf("etcdlock: lock already released: %w", lockcore.ErrReleased)
	// ErrBadMode means [Options.Mode] names no mode.
	ErrBadMode = errors.New("etcdlock: unknown mode")
)

// answer maps the concurrency package's answers to this package's
// sentinels, and returns other errors as they are.
func answer(err error) error {
	switch {
	case errors.Is(err, concurrency.ErrLocked):
		return ErrNotAcquired
	case errors.Is(err, concurrency.ErrSessionExpired):
		return ErrSessionExpired
	}
	return err
}

// opError wraps err, the failure of op on key, as a *[lockcore.OpError]:
// indeterminate unless err is one of this package's answers or sent was
// false (nothing reached etcd that could take the lock).
func opError(op, key string, err error, sent bool) error {
	e := lockcore.NewOpError(op, key, err)
	if !sent {
		e.Indeterminate = false
	}
	return e
}
