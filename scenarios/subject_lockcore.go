package scenarios

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/lockcore"
)

// lockpick's own locks, from package lockcore.
func init() {
	RegisterSubject("set-nx", func(c SubjectConfig) Subject {
		return LockerSubject(c, func(rdb *redis.Client) lockcore.Locker {
			return lockcore.NewMutex(rdb, c.Lock.Key, &lockcore.Options{TTL: c.Lock.TTL.D(), RetryDelay: c.Lock.RetryDelay.D(),
				Fencing: c.Fenced, WaitReplicas: c.Lock.WaitReplicas, WaitTimeout: c.Lock.WaitTimeout.D(), Clock: c.Clock()})
		})
	})
	RegisterSubject("reentrant", func(c SubjectConfig) Subject {
		return LockerSubject(c, func(rdb *redis.Client) lockcore.Locker {
			return lockcore.NewReentrant(rdb, c.Lock.Key, &lockcore.ReentrantOptions{LeaseTime: c.Lock.TTL.D(),
				NoWatchdog: c.Lock.NoWatchdog, Clock: c.Clock(), OnRenew: c.OnRenew})
		})
	})
	RegisterSubject("setnx-expire", func(c SubjectConfig) Subject {
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
		return LockerSubject(c, func(rdb *redis.Client) lockcore.Locker { return lockcore.NewSetNXExpire(rdb, c.Lock.Key, opt) })
	})
	RegisterSubject("getset", func(c SubjectConfig) Subject {
		return LockerSubject(c, func(rdb *redis.Client) lockcore.Locker {
			return lockcore.NewGetSetLock(rdb, c.Lock.Key, &lockcore.LegacyOptions{TTL: c.Lock.TTL.D(),
				RetryDelay: c.Lock.RetryDelay.D(), Clock: c.Clock()})
		})
	})
	RegisterSubject("redlock", func(c SubjectConfig) Subject {
		clients, names := c.Masters()
		nodes := make([]redis.Scripter, len(clients))
		for i, rdb := range clients {
			nodes[i] = rdb
		}
		return &redlock{names: names, l: lockcore.NewRedlock(nodes, c.Lock.Key, &lockcore.RedlockOptions{
			TTL: c.Lock.TTL.D(), NodeTimeout: c.Lock.NodeTimeout.D(), RetryDelay: c.Lock.RetryDelay.D(),
			ReleaseAcquiredOnly: c.Lock.ReleaseAcquiredOnly, Clock: c.Clock()})}
	})
}

// redlock runs Redlock over every master; the grant names the nodes that
// granted it, e.g. "n1,n2,n4".
type redlock struct {
	names []string
	l     *lockcore.Redlock
}

func (s *redlock) Acquire(ctx context.Context) (Grant, error) {
	lease, err := s.l.TryLock(ctx)
	if err != nil {
		return Grant{}, err
	}
	granted := make([]string, len(lease.Nodes))
	for i, n := range lease.Nodes {
		granted[i] = s.names[n]
	}
	return Grant{Token: lease.Token, Fence: lease.Fence, ValidUntil: lease.ValidUntil(), Node: strings.Join(granted, ",")}, nil
}

func (s *redlock) Release(ctx context.Context) (string, error) { return "", s.l.Unlock(ctx) }
