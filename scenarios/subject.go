package scenarios

import (
	"context"

	"github.com/lockpick/lockpick/lockcore"
)

// A subject is the lock under test as one client sees it. Node names which
// node(s) served the call, for the history.
type subject interface {
	acquire(ctx context.Context) (lease *lockcore.Lease, node string, err error)
	release(ctx context.Context) (node string, err error)
}

// subjects builds a client's subject by lock kind.
var subjects = map[string]func(tgt *target, l Lock, fenced bool) subject{
	"set-nx": newSetNX,
}

// setNX is lockcore's single-instance lock on whatever node the target names
// at the moment of each acquire (the current master, with sentinels).
type setNX struct {
	tgt    *target
	lock   Lock
	m      *lockcore.Mutex
	node   string
	fenced bool
}

func newSetNX(tgt *target, l Lock, fenced bool) subject {
	return &setNX{tgt: tgt, lock: l, fenced: fenced}
}

func (s *setNX) acquire(ctx context.Context) (*lockcore.Lease, string, error) {
	rdb, node, err := s.tgt.master(ctx)
	if err != nil {
		return nil, "", err
	}
	s.m = lockcore.NewMutex(rdb, s.lock.Key, &lockcore.Options{TTL: s.lock.TTL.D(), RetryDelay: s.lock.RetryDelay.D(), Fencing: s.fenced})
	s.node = node
	lease, err := s.m.TryLock(ctx)
	return lease, node, err
}

func (s *setNX) release(ctx context.Context) (string, error) { return s.node, s.m.Unlock(ctx) }
