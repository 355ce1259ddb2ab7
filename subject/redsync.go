package subject

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// github.com/go-redsync/redsync, the Go Redlock most services use: SET NX PX
// on every master at once, granted on a majority within TTL minus the time
// it took minus 1% drift, released on every master.
func init() {
	Register("redsync", scenario.Traits{Shape: scenario.ShapeRedlock, Honours: []string{"node_timeout"}}, newRedsync)
}

// A redsyncSubject runs one redsync.Mutex over a pool per master. The pools
// note which node accepted which value, so a grant can name its majority
// ("n1,n2,n3"), which redsync itself does not tell.
type redsyncSubject struct {
	cfg   Config
	names []string
	m     *redsync.Mutex

	mu       sync.Mutex
	accepted []string // per node, the last value its SET NX accepted

	nodes string // the nodes that granted the current lock
}

var (
	_ Subject  = (*redsyncSubject)(nil)
	_ Extender = (*redsyncSubject)(nil)
)

func newRedsync(c Config) Subject {
	clients, names := c.Masters()
	s := &redsyncSubject{cfg: c, names: names, accepted: make([]string, len(clients))}
	pools := make([]rsredis.Pool, len(clients))
	for i, rdb := range clients {
		pools[i] = &notingPool{Pool: goredis.NewPool(rdb), node: i, s: s}
	}
	ttl := c.Lock.TTL.D()
	opts := []redsync.Option{redsync.WithExpiry(ttl), redsync.WithTries(1)}
	if nt := c.Lock.NodeTimeout.D(); nt > 0 {
		// redsync bounds each attempt, all nodes at once, by TTL × factor.
		opts = append(opts, redsync.WithTimeoutFactor(float64(nt)/float64(ttl)))
	}
	s.m = redsync.New(pools...).NewMutex(c.Lock.Key, opts...)
	return s
}

func (s *redsyncSubject) Acquire(ctx context.Context) (Grant, error) {
	s.nodes = ""
	if err := s.m.TryLockContext(ctx); err != nil {
		// Short of a majority redsync releases every node again: the
		// client does not hold the lock, as with lockcore's Redlock.
		return Grant{}, fmt.Errorf("%w: %w", lockcore.ErrNotAcquired, err)
	}
	s.nodes = s.grantedBy(s.m.Value())
	return Grant{Token: s.m.Value(), ValidUntil: s.onClientClock(s.m.Until()), Node: s.nodes}, nil
}

func (s *redsyncSubject) Release(ctx context.Context) (string, error) {
	ok, err := s.m.UnlockContext(ctx)
	if ok {
		return s.nodes, nil
	}
	return s.nodes, s.quorumError("release", err)
}

// Extend resets the TTL on every master still holding the lock; redsync
// moves the deadline only if a majority did.
func (s *redsyncSubject) Extend(ctx context.Context) (Grant, error) {
	ok, err := s.m.ExtendContext(ctx)
	if !ok {
		return Grant{Node: s.nodes}, s.quorumError("extend", err)
	}
	return Grant{Token: s.m.Value(), ValidUntil: s.onClientClock(s.m.Until()), Node: s.nodes}, nil
}

// quorumError maps a release or extend that missed its majority: unknown
// if a node may have run the command without answering, else not held.
func (s *redsyncSubject) quorumError(op string, err error) error {
	if mayHaveRun(err) {
		return &lockcore.OpError{Op: op, Key: s.m.Name(), Indeterminate: true, Err: err}
	}
	if err == nil {
		return lockcore.ErrNotHeld
	}
	return fmt.Errorf("%w: %w", lockcore.ErrNotHeld, err)
}

// mayHaveRun reports whether any node's error in err (redsync joins them)
// leaves open that the node ran the command, by [lockcore.MayHaveRun].
// redsync's own errors (ErrNodeTaken, ErrLockAlreadyExpired,
// ErrExtendFailed) are answers from nodes that ran the command.
func mayHaveRun(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return slices.ContainsFunc(j.Unwrap(), mayHaveRun)
	}
	var rerr *redsync.RedisError
	return errors.As(err, &rerr) && lockcore.MayHaveRun(rerr.Err)
}

// grantedBy names the nodes whose SET NX accepted value.
func (s *redsyncSubject) grantedBy(value string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for i, v := range s.accepted {
		if v == value {
			names = append(names, s.names[i])
		}
	}
	return strings.Join(names, ",")
}

// onClientClock moves a deadline redsync read off the host clock onto the
// client's own, which the history converts back.
func (s *redsyncSubject) onClientClock(t time.Time) time.Time {
	return t.Add(s.cfg.Lock.Skew(s.cfg.Process))
}

// A notingPool is one node's redsync pool that notes accepted SET NXs.
type notingPool struct {
	rsredis.Pool
	node int
	s    *redsyncSubject
}

func (p *notingPool) Get(ctx context.Context) (rsredis.Conn, error) {
	c, err := p.Pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &notingConn{Conn: c, p: p}, nil
}

type notingConn struct {
	rsredis.Conn
	p *notingPool
}

func (c *notingConn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	ok, err := c.Conn.SetNX(name, value, expiry)
	if ok {
		c.p.s.mu.Lock()
		c.p.s.accepted[c.p.node] = value
		c.p.s.mu.Unlock()
	}
	return ok, err
}
