package scenarios

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/lockcore"
)

// A subject is the lock under test as one client sees it. Node names which
// node(s) served the call, for the history.
type subject interface {
	acquire(ctx context.Context) (lease *lockcore.Lease, node string, err error)
	release(ctx context.Context) (node string, err error)
}

// A subjectConfig is what building one client's subject takes.
type subjectConfig struct {
	tgt     *target
	lock    Lock
	fenced  bool
	process int
}

// clock returns the client's clock, skewed as the scenario says.
func (c subjectConfig) clock() lockcore.Clock {
	if skew := c.lock.skew(c.process); skew != 0 {
		return lockcore.SkewedClock{Base: lockcore.SystemClock{}, Offset: skew}
	}
	return lockcore.SystemClock{}
}

// skew is client p's clock offset.
func (l Lock) skew(p int) time.Duration {
	if p >= 1 && p <= len(l.ClockSkew) {
		return l.ClockSkew[p-1].D()
	}
	return 0
}

// subjects builds a client's subject by lock kind.
var subjects = map[string]func(subjectConfig) subject{
	"set-nx": func(c subjectConfig) subject {
		return &perMaster{tgt: c.tgt, mk: func(rdb *redis.Client) lockcore.Locker {
			return lockcore.NewMutex(rdb, c.lock.Key, &lockcore.Options{TTL: c.lock.TTL.D(), RetryDelay: c.lock.RetryDelay.D(),
				Fencing: c.fenced, WaitReplicas: c.lock.WaitReplicas, WaitTimeout: c.lock.WaitTimeout.D(), Clock: c.clock()})
		}}
	},
	"reentrant": func(c subjectConfig) subject {
		return &perMaster{tgt: c.tgt, mk: func(rdb *redis.Client) lockcore.Locker {
			return lockcore.NewReentrant(rdb, c.lock.Key, &lockcore.ReentrantOptions{LeaseTime: c.lock.TTL.D(),
				NoWatchdog: c.lock.NoWatchdog, Clock: c.clock()})
		}}
	},
	"setnx-expire": func(c subjectConfig) subject {
		opt := &lockcore.LegacyOptions{TTL: c.lock.TTL.D(), RetryDelay: c.lock.RetryDelay.D(), Clock: c.clock()}
		if c.lock.CrashAfterSetNX == c.process {
			// A real crash: the isolated client's process dies between
			// SETNX and EXPIRE, leaving a key without a TTL.
			opt.AfterSetNX = func(context.Context) error { os.Exit(0); return nil }
		}
		return &perMaster{tgt: c.tgt, mk: func(rdb *redis.Client) lockcore.Locker {
			return lockcore.NewSetNXExpire(rdb, c.lock.Key, opt)
		}}
	},
	"getset": func(c subjectConfig) subject {
		return &perMaster{tgt: c.tgt, mk: func(rdb *redis.Client) lockcore.Locker {
			return lockcore.NewGetSetLock(rdb, c.lock.Key, &lockcore.LegacyOptions{TTL: c.lock.TTL.D(),
				RetryDelay: c.lock.RetryDelay.D(), Clock: c.clock()})
		}}
	},
	"redlock": func(c subjectConfig) subject {
		clients, names := c.tgt.masters()
		nodes := make([]redis.Scripter, len(clients))
		for i, rdb := range clients {
			nodes[i] = rdb
		}
		return &redlock{names: names, l: lockcore.NewRedlock(nodes, c.lock.Key, &lockcore.RedlockOptions{
			TTL: c.lock.TTL.D(), NodeTimeout: c.lock.NodeTimeout.D(), RetryDelay: c.lock.RetryDelay.D(),
			ReleaseAcquiredOnly: c.lock.ReleaseAcquiredOnly, Clock: c.clock()})}
	},
}

// perMaster runs a single-instance lock on whatever node the target names
// at the moment of each acquire (the current master, with sentinels). A
// client keeps one lock per node, so a reentrant lock keeps its identity.
type perMaster struct {
	tgt   *target
	mk    func(*redis.Client) lockcore.Locker
	locks map[string]lockcore.Locker
	cur   lockcore.Locker
	node  string
}

func (s *perMaster) acquire(ctx context.Context) (*lockcore.Lease, string, error) {
	rdb, node, err := s.tgt.master(ctx)
	if err != nil {
		return nil, "", err
	}
	if s.locks == nil {
		s.locks = map[string]lockcore.Locker{}
	}
	l, ok := s.locks[node]
	if !ok {
		l = s.mk(rdb)
		s.locks[node] = l
	}
	s.cur, s.node = l, node
	lease, err := l.TryLock(ctx)
	return lease, node, err
}

func (s *perMaster) release(ctx context.Context) (string, error) { return s.node, s.cur.Unlock(ctx) }

// redlock runs Redlock over every master; the history names the nodes that
// granted a lease, e.g. "n1,n2,n4".
type redlock struct {
	names []string
	l     *lockcore.Redlock
}

func (s *redlock) acquire(ctx context.Context) (*lockcore.Lease, string, error) {
	lease, err := s.l.TryLock(ctx)
	if err != nil {
		return nil, "", err
	}
	granted := make([]string, len(lease.Nodes))
	for i, n := range lease.Nodes {
		granted[i] = s.names[n]
	}
	return lease, strings.Join(granted, ","), nil
}

func (s *redlock) release(ctx context.Context) (string, error) { return "", s.l.Unlock(ctx) }
