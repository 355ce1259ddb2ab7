package subject

import (
	"context"
	"errors"
	"fmt"

	"github.com/bsm/redislock"

	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// github.com/bsm/redislock, the single-instance lock of many Go services:
// SET NX PX through a Lua script and a compare-and-delete release. It has
// no fencing token and computes no validity deadline of its own.
func init() {
	Register("redislock", scenario.Traits{Shape: scenario.ShapeSingle}, func(c Config) Subject {
		return &redislockSubject{cfg: c, clients: map[string]*redislock.Client{}}
	})
}

// A redislockSubject obtains the lock on whatever node is master at the
// moment, as a service following the sentinels would, and releases it on
// the node that granted it.
type redislockSubject struct {
	cfg     Config
	clients map[string]*redislock.Client // by node name

	lock *redislock.Lock // the current grant, nil without one
	node string          // the node that granted it
}

var (
	_ Subject  = (*redislockSubject)(nil)
	_ Extender = (*redislockSubject)(nil)
)

func (s *redislockSubject) Acquire(ctx context.Context) (Grant, error) {
	rdb, node, err := s.cfg.Master(ctx)
	if err != nil {
		return Grant{}, noMaster(s.cfg.Lock.Key, err)
	}
	c, ok := s.clients[node]
	if !ok {
		c = redislock.New(rdb)
		s.clients[node] = c
	}
	s.lock = nil
	key, ttl := s.cfg.Lock.Key, s.cfg.Lock.TTL.D()
	// redislock hands out no deadline; its user counts the TTL from the
	// moment the request went out, the most the lease can be worth.
	sent := s.cfg.Clock().Now()
	ctx, served := s.cfg.Served(ctx, node)
	l, err := c.Obtain(ctx, key, ttl, nil)
	node = served.Node()
	s.node = node
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return Grant{Node: node}, served.Outcome("acquire", key, fmt.Errorf("%w: %w", lockcore.ErrNotAcquired, err))
	case err != nil:
		return Grant{Node: node}, served.Outcome("acquire", key, lockcore.NewOpError("acquire", key, err))
	}
	s.lock = l
	return Grant{Token: l.Token(), ValidUntil: sent.Add(ttl), Node: node}, nil
}

func (s *redislockSubject) Release(ctx context.Context) (string, error) {
	l := s.lock
	if l == nil {
		return s.node, lockcore.ErrReleased
	}
	s.lock = nil
	switch err := l.Release(ctx); {
	case err == nil:
		return s.node, nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		return s.node, fmt.Errorf("%w: %w", lockcore.ErrNotHeld, err)
	default:
		return s.node, lockcore.NewOpError("release", l.Key(), err)
	}
}

// Extend refreshes the lock's TTL on the node that granted it.
func (s *redislockSubject) Extend(ctx context.Context) (Grant, error) {
	l := s.lock
	if l == nil {
		return Grant{}, lockcore.ErrReleased
	}
	ttl := s.cfg.Lock.TTL.D()
	sent := s.cfg.Clock().Now()
	switch err := l.Refresh(ctx, ttl, nil); {
	case errors.Is(err, redislock.ErrNotObtained):
		s.lock = nil
		return Grant{Node: s.node}, fmt.Errorf("%w: %w", lockcore.ErrNotHeld, err)
	case err != nil:
		return Grant{Node: s.node}, lockcore.NewOpError("extend", l.Key(), err)
	}
	return Grant{Token: l.Token(), ValidUntil: sent.Add(ttl), Node: s.node}, nil
}
