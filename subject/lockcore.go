package subject

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// lockpick's own locks, from package lockcore.
func init() {
	Register("set-nx", scenario.Traits{Shape: scenario.ShapeSingle,
		Honours: []string{"wait_replicas", "wait_timeout", "fenced", "clock_skew", "acquire", "constant_token"}}, func(c Config) Subject {
		var token func() string // default: a random one per grant
		if c.Lock.ConstantToken {
			token = func() string { return "1" } // SET lock 1 NX PX: every holder's value is the same
		}
		return LockerSubject(c, func(rdb redis.UniversalClient) lockcore.Locker {
			return lockcore.NewMutex(rdb, c.Lock.Key, &lockcore.Options{TTL: c.Lock.TTL.D(), RetryDelay: c.Lock.RetryDelay.D(),
				Fencing: c.Fenced, WaitReplicas: c.Lock.WaitReplicas, WaitTimeout: c.Lock.WaitTimeout.D(), Clock: c.Clock(), Token: token})
		})
	})
	Register("reentrant", scenario.Traits{Shape: scenario.ShapeSingle, Honours: []string{"fenced", "no_watchdog", "clock_skew", "acquire",
		"reenter", "stop_renewing_on_error", "count_every_acquire"}}, func(c Config) Subject {
		return LockerSubject(c, func(rdb redis.UniversalClient) lockcore.Locker {
			return lockcore.NewReentrant(rdb, c.Lock.Key, &lockcore.ReentrantOptions{LeaseTime: c.Lock.TTL.D(),
				NoWatchdog: c.Lock.NoWatchdog, StopRenewingOnError: c.Lock.StopRenewingOnError,
				CountEveryAcquire: c.Lock.CountEveryAcquire, Fencing: c.Fenced, Clock: c.Clock(), OnRenew: c.OnRenew})
		})
	})
	Register("setnx-expire", scenario.Traits{Shape: scenario.ShapeSingle,
		Honours: []string{"crash_after_setnx", "pause_after_setnx", "clock_skew", "acquire"}}, func(c Config) Subject {
		opt := &lockcore.LegacyOptions{TTL: c.Lock.TTL.D(), RetryDelay: c.Lock.RetryDelay.D(), Clock: c.Clock()}
		switch {
		case c.Lock.CrashAfterSetNX == c.Process:
			// A real crash: the isolated client's process dies between
			// SETNX and EXPIRE, leaving a key without a TTL.
			opt.AfterSetNX = func(context.Context) error { os.Exit(0); return nil }
		case c.Lock.PauseAfterSetNX > 0:
			// A slow client: a fault (the server's crash) can land between
			// SETNX and EXPIRE.
			opt.AfterSetNX = func(ctx context.Context) error {
				select {
				case <-time.After(c.Lock.PauseAfterSetNX.D()):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		return LockerSubject(c, func(rdb redis.UniversalClient) lockcore.Locker { return lockcore.NewSetNXExpire(rdb, c.Lock.Key, opt) })
	})
	Register("getset", scenario.Traits{Shape: scenario.ShapeSingle,
		Honours: []string{"clock_skew", "acquire", "naive_recovery", "recovery_pause", "check_before_del", "del_pause"}}, func(c Config) Subject {
		return LockerSubject(c, func(rdb redis.UniversalClient) lockcore.Locker {
			return lockcore.NewGetSetLock(rdb, c.Lock.Key, &lockcore.LegacyOptions{TTL: c.Lock.TTL.D(),
				RetryDelay: c.Lock.RetryDelay.D(), Clock: c.Clock(),
				NaiveRecovery: c.Lock.NaiveRecovery, RecoveryPause: c.Lock.RecoveryPause.D(),
				CheckBeforeDel: c.Lock.CheckBeforeDel, DelPause: c.Lock.DelPause.D()})
		})
	})
	Register("redlock", scenario.Traits{Shape: scenario.ShapeRedlock, Honours: []string{"node_timeout", "release_acquired_only", "clock_skew",
		"acquire", "sequential", "greedy", "give_up_early", "rotate_order", "fixed_retry_delay", "drift_factor", "wait_all", "tries",
		"ignore_elapsed"}}, func(c Config) Subject {
		_, names := c.Masters()
		nodes := c.Target.redlockNodes()
		var keys []string
		if c.Target.view.Cluster {
			keys = shardKeys(c.Lock.Key, len(nodes))
		}
		return &overMasters{names: names, nodes: nodes, tgt: c.Target, l: lockcore.NewRedlock(nodes, c.Lock.Key, &lockcore.RedlockOptions{
			Keys: keys,
			TTL:  c.Lock.TTL.D(), NodeTimeout: c.Lock.NodeTimeout.D(), RetryDelay: c.Lock.RetryDelay.D(),
			ReleaseAcquiredOnly: c.Lock.ReleaseAcquiredOnly, Clock: c.Clock(),
			Sequential: c.Lock.Sequential, Greedy: c.Lock.Greedy, GiveUpEarly: c.Lock.GiveUpEarly,
			FixedRetryDelay: c.Lock.FixedRetryDelay, DriftFactor: c.Lock.DriftFactor, WaitAll: c.Lock.WaitAll,
			Tries: c.Lock.Tries, Order: c.order(len(nodes)), IgnoreElapsed: c.Lock.IgnoreElapsed}), block: c.Lock.Acquire == scenario.AcquireBlock}
	})
	Register("multilock", scenario.Traits{Shape: scenario.ShapeRedlock,
		Honours: []string{"no_watchdog", "clock_skew", "acquire", "rotate_order", "all_nodes"}}, func(c Config) Subject {
		clients, names := c.Masters()
		// RedissonMultiLock asks the nodes in the order it was given them:
		// rotate_order gives client p a list starting at its p-th master.
		nodes := make([]lockcore.Subscriber, len(clients))
		ordered := make([]string, len(clients))
		for k, i := range c.order(len(clients)) {
			nodes[k], ordered[k] = clients[i], names[i]
		}
		return &overMasters{names: ordered, block: c.Lock.Acquire == scenario.AcquireBlock, l: lockcore.NewMultiLock(nodes, c.Lock.Key,
			&lockcore.MultiLockOptions{LeaseTime: c.Lock.TTL.D(), All: c.Lock.AllNodes, NoWatchdog: c.Lock.NoWatchdog,
				RetryDelay: c.Lock.RetryDelay.D(), Clock: c.Clock(), OnRenew: c.OnRenew})}
	})
}

// overMasters runs a lock over every master (Redlock, MultiLock); the
// grant names the nodes that granted it, e.g. "n1,n2,n4".
type overMasters struct {
	names []string
	nodes []redis.Scripter // a *follower names the node it went to; may be nil
	tgt   *Target          // names the node a *shardNode reached
	l     lockcore.Locker
	block bool // Lock, not TryLock
}

func (s *overMasters) Acquire(ctx context.Context) (Grant, error) {
	lease, err := attempt(ctx, s.l, s.block)
	if err != nil {
		return Grant{}, err
	}
	granted := make([]string, len(lease.Nodes))
	for i, n := range lease.Nodes {
		granted[i] = s.names[n]
		if n < len(s.nodes) {
			switch nd := s.nodes[n].(type) {
			case *follower:
				if nd.Node() != "" {
					granted[i] = nd.Node()
				}
			case *shardNode:
				if a := nd.answered(); a != "" {
					granted[i] = s.tgt.nodeNamed(a)
				}
			}
		}
	}
	return Grant{Token: lease.Token, Fence: lease.Fence, ValidUntil: lease.ValidUntil(), Node: strings.Join(granted, ","),
		Lost: lease.Lost()}, nil
}

func (s *overMasters) Release(ctx context.Context) (string, error) { return "", s.l.Unlock(ctx) }

// order returns the order in which client c asks n masters: 0..n-1, or
// with RotateOrder starting at the c.Process-th.
func (c Config) order(n int) []int {
	shift := 0
	if c.Lock.RotateOrder {
		shift = c.Process - 1
	}
	out := make([]int, n)
	for i := range out {
		out[i] = (shift + i) % n
	}
	return out
}
