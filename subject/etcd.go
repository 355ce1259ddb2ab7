package subject

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockpick/lockpick/etcdlock"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// etcd's locks through package etcdlock, on an etcd topology: "etcd-mutex"
// is the v3.6 client's concurrency.Mutex (the fix of etcd-io/etcd#11456),
// "etcd-v3lock" the 3.4.23 server's Lock RPC (the unfixed behaviour),
// "etcd-rwmutex" the write lock of the v3.6 client's RWMutex recipe (which
// has etcd-io/etcd#16221, a waiter granted after its lease expired). Each
// client has its own etcd client to every member's proxy, so link faults
// hit it; each acquire runs in a session of its own, a lease of the
// scenario's TTL.
func init() {
	Register("etcd-mutex", scenario.Traits{Shape: scenario.ShapeEtcd, Honours: []string{"fenced", "acquire", "require_leader", "ignore_lost"}},
		func(c Config) Subject { return newEtcdSubject(c, etcdlock.ModeMutex) })
	Register("etcd-v3lock", scenario.Traits{Shape: scenario.ShapeEtcd, Honours: []string{"acquire", "ignore_lost"}},
		func(c Config) Subject { return newEtcdSubject(c, etcdlock.ModeV3Lock) })
	Register("etcd-rwmutex", scenario.Traits{Shape: scenario.ShapeEtcd, Honours: []string{"acquire", "ignore_lost"}},
		func(c Config) Subject { return newEtcdSubject(c, etcdlock.ModeRWMutex) })
}

// etcdDialTimeout bounds the first connection to a member, at warm-up.
const etcdDialTimeout = 2 * time.Second

// An etcdSubject is one client's etcd lock.
type etcdSubject struct {
	cfg  Config
	mode etcdlock.Mode

	mu      sync.Mutex // guards cli against Close from another goroutine
	cli     *clientv3.Client
	lock    *etcdlock.Lock
	members map[uint64]string // member id -> name, from the member list
	node    string            // the member that answered the last acquire
}

var (
	_ Subject = (*etcdSubject)(nil)
	_ Warmer  = (*etcdSubject)(nil)
)

func newEtcdSubject(c Config, mode etcdlock.Mode) *etcdSubject {
	return &etcdSubject{cfg: c, mode: mode, members: map[uint64]string{}}
}

// WarmUp connects to the members and reads the lock's prefix once, so the
// first acquire does not pay for the dial. An error wraps [ErrUnusable].
func (s *etcdSubject) WarmUp(ctx context.Context) error {
	cli, err := s.client()
	if err != nil {
		return fmt.Errorf("%w: etcd client: %w", ErrUnusable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, etcdDialTimeout)
	defer cancel()
	if _, err := cli.Get(ctx, s.cfg.Lock.Key, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("%w: etcd members %s do not answer: %w", ErrUnusable, strings.Join(cli.Endpoints(), ", "), err)
	}
	s.learnMembers(ctx)
	return nil
}

// client returns the subject's etcd client, made on first use.
func (s *etcdSubject) client() (*clientv3.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cli != nil {
		return s.cli, nil
	}
	var eps []string
	for _, m := range s.cfg.Target.view.Etcd {
		eps = append(eps, m.Addr)
	}
	if len(eps) == 0 {
		return nil, errors.New("no etcd members in the view (topology: {etcd: N})")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: etcdDialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	s.cli = cli
	s.lock = etcdlock.New(cli, s.cfg.Lock.Key, &etcdlock.Options{TTL: s.cfg.Lock.TTL.D(), Mode: s.mode, RequireLeader: s.cfg.Lock.RequireLeader})
	return cli, nil
}

// learnMembers maps the members' ids to their names by their client
// addresses (the proxies they advertise, which a client's own link
// announces); errors leave the map as it is.
func (s *etcdSubject) learnMembers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	r, err := s.cli.MemberList(ctx)
	if err != nil {
		return
	}
	for _, m := range r.Members {
		for _, u := range m.ClientURLs {
			for _, n := range s.cfg.Target.view.Etcd {
				if a := strings.TrimPrefix(u, "http://"); a == n.Addr || a == n.Announced {
					s.members[m.ID] = n.Name
				}
			}
		}
	}
}

// memberName names the member with id, asking the members again for one
// not seen yet (a replaced member has a new id); "" if still unknown.
func (s *etcdSubject) memberName(ctx context.Context, id uint64) string {
	if n, ok := s.members[id]; ok {
		return n
	}
	s.learnMembers(ctx)
	return s.members[id]
}

// Acquire takes the lock: one attempt (TryLock), or with acquire: block,
// waiting until ctx ends. The grant's fence is the holder key's create
// revision (etcd-v3lock: the reply's revision) when the scenario is
// fenced, and Lost is the session's Done() unless lock.ignore_lost.
func (s *etcdSubject) Acquire(ctx context.Context) (Grant, error) {
	if _, err := s.client(); err != nil {
		return Grant{}, &lockcore.OpError{Op: "acquire", Key: s.cfg.Lock.Key, Err: err}
	}
	var (
		g   *etcdlock.Grant
		err error
	)
	if s.cfg.Lock.Acquire == scenario.AcquireBlock {
		g, err = s.lock.Lock(ctx)
	} else {
		g, err = s.lock.TryLock(ctx)
	}
	if err != nil {
		return Grant{Node: s.node}, err
	}
	s.node = s.memberName(ctx, g.Member)
	out := Grant{Token: g.Key, ValidUntil: g.ValidUntil(), Node: s.node}
	if s.cfg.Fenced {
		out.Fence = g.Fence
	}
	if !s.cfg.Lock.IgnoreLost {
		out.Lost = g.Lost()
	}
	return out, nil
}

// Release deletes the holder's key and revokes its lease.
func (s *etcdSubject) Release(ctx context.Context) (string, error) {
	if s.lock == nil {
		return "", lockcore.ErrReleased
	}
	return s.node, s.lock.Unlock(ctx)
}

// Close abandons a grant still held (its lease expires) and closes the
// etcd client.
func (s *etcdSubject) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cli == nil {
		return nil
	}
	s.lock.Abandon()
	err := s.cli.Close()
	s.cli = nil
	return err
}
