package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"

	"github.com/lockpick/lockpick/lockcore"
)

// ErrNoTryLock means TryLock was called in [ModeV3Lock] or
// [ModeRWMutex]: the server's Lock RPC and the recipe always wait.
var ErrNoTryLock = errors.New("etcdlock: this mode has no try-lock")

// ErrHeld means Lock or TryLock was called while this Lock holds a grant
// or is acquiring one.
var ErrHeld = errors.New("etcdlock: already holding or acquiring")

// A Lock is one client's handle on an etcd lock named by a key prefix.
// Each acquisition runs in a session of its own (a fresh lease), so a
// grant's [Grant.Lost] speaks of that grant only. A Lock is used by one
// goroutine, except [Lock.Abandon], which may be called from any.
type Lock struct {
	cli *clientv3.Client
	key string
	opt Options
	err error // of the options

	mu  sync.Mutex
	cur *session // the session of the grant held or being acquired
}

// session is one acquisition's lease, its etcd session and what holds it.
type session struct {
	s     *concurrency.Session
	m     *concurrency.Mutex // nil in ModeV3Lock and ModeRWMutex
	rw    *recipe.RWMutex    // only in ModeRWMutex
	stop  context.CancelFunc // ends the validity tracking's keep-alive
	v     *validity          // the lease's deadline
	key   string             // the holder's key, once granted
	grant *Grant             // nil while acquiring
}

// New returns a Lock on key for the client cli. A nil opt means the
// defaults. Bad options make every call return an error wrapping
// [ErrBadMode].
func New(cli *clientv3.Client, key string, opt *Options) *Lock {
	var o Options
	if opt != nil {
		o = *opt
	}
	o, err := o.withDefaults()
	return &Lock{cli: cli, key: key, opt: o, err: err}
}

// Key returns the lock's key prefix.
func (l *Lock) Key() string { return l.key }

// Lock waits for the lock until ctx ends. A refusal ([ErrSessionExpired],
// matching [lockcore.ErrNotAcquired]) is certain; any other error is a
// *[lockcore.OpError], Indeterminate when the lock may have been taken.
// After any error the session is closed, so no key of it stays behind.
func (l *Lock) Lock(ctx context.Context) (*Grant, error) { return l.acquire(ctx, true) }

// TryLock makes one attempt and returns [ErrNotAcquired] at once if
// another session holds the lock; errors are as for [Lock.Lock]. It
// returns [ErrNoTryLock] in ModeV3Lock and ModeRWMutex.
func (l *Lock) TryLock(ctx context.Context) (*Grant, error) {
	if l.opt.Mode == ModeV3Lock || l.opt.Mode == ModeRWMutex {
		return nil, ErrNoTryLock
	}
	return l.acquire(ctx, false)
}

func (l *Lock) acquire(ctx context.Context, wait bool) (*Grant, error) {
	if l.err != nil {
		return nil, l.err
	}
	l.mu.Lock()
	busy := l.cur != nil
	l.mu.Unlock()
	if busy {
		return nil, ErrHeld
	}
	if l.opt.RequireLeader {
		ctx = clientv3.WithRequireLeader(ctx)
	}
	start := time.Now()
	s, err := l.open(ctx, start)
	if err != nil {
		return nil, err
	}
	g := &Grant{Acquired: start, Lease: int64(s.s.Lease()), lost: s.s.Done(), v: s.v}
	var hdr *pb.ResponseHeader
	switch l.opt.Mode {
	case ModeV3Lock:
		g.Key, hdr, err = v3lockLock(ctx, l.cli, l.key, s.s.Lease())
		if err == nil {
			g.Fence = hdr.Revision
		}
	case ModeRWMutex:
		s.rw = recipe.NewRWMutex(s.s, l.key)
		if err = withContext(ctx, s.rw.Lock); err == nil {
			g.Key, g.Fence, hdr, err = l.writerKey(ctx, s.s.Lease())
		}
	default:
		s.m = concurrency.NewMutex(s.s, l.key)
		if wait {
			err = lockMutex(ctx, s.m)
		} else {
			err = s.m.TryLock(ctx)
		}
		if err == nil {
			g.Key, hdr, g.Fence = s.m.Key(), s.m.Header(), createRevision(s.m)
		}
	}
	if err != nil {
		l.close(s)
		if err = answer(err); errors.Is(err, lockcore.ErrNotAcquired) {
			return nil, err
		}
		return nil, opError("acquire", l.key, err, true)
	}
	g.Revision, g.Member = hdr.Revision, hdr.MemberId
	l.mu.Lock()
	s.key, s.grant = g.Key, g
	l.mu.Unlock()
	return g, nil
}

// writerKey finds the recipe's writer key of lease, its create revision
// and the read's header: the recipe's Lock returns none of them. The read
// comes after the grant and changes nothing the lock decided. A key that
// is gone (the lease expired while the recipe waited, etcd-io/etcd#16221)
// is named by its lease, with fence 0.
func (l *Lock) writerKey(ctx context.Context, lease clientv3.LeaseID) (string, int64, *pb.ResponseHeader, error) {
	pfx := l.key + "/write/"
	r, err := l.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return "", 0, nil, err
	}
	for _, kv := range r.Kvs {
		if kv.Lease == int64(lease) {
			return string(kv.Key), kv.CreateRevision, r.Header, nil
		}
	}
	return fmt.Sprintf("%s(lease %x: key gone)", pfx, int64(lease)), 0, r.Header, nil
}

// withContext runs f, which cannot be cancelled (the recipe's calls use
// context.TODO), and returns its error, or ctx's as soon as ctx ends: f
// then finishes on its own, or when the session's lease is revoked or the
// client closed.
func withContext(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lockMutex waits for m until ctx ends. When its wait fails,
// concurrency.Mutex.Lock deletes its key with the client's own context
// (m.Unlock(client.Ctx())), which never ends while the member it talks to
// is frozen or no member can be reached: Lock then outlived its ctx for
// good, and a trial whose waiter was cut off at its end hung (found by
// explore on etcd-pause-holder). lockMutex returns ctx's error when ctx
// ends and leaves that delete to finish, or to end when the client
// closes; the caller revokes the lease, which deletes the key anyway.
func lockMutex(ctx context.Context, m *concurrency.Mutex) error {
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// open grants a lease of the lock's TTL, starts keeping it alive for the
// session and for the validity deadline, and makes it the current session.
// Nothing it does can take the lock, so its errors are certain.
func (l *Lock) open(ctx context.Context, start time.Time) (*session, error) {
	lease, err := l.cli.Grant(ctx, l.opt.ttlSeconds())
	if err != nil {
		return nil, opError("acquire", l.key, err, false)
	}
	v := &validity{until: start.Add(time.Duration(lease.TTL) * time.Second)}
	tctx, stop := context.WithCancel(context.Background())
	since := time.Now()
	ka, err := l.cli.KeepAlive(tctx, lease.ID)
	if err != nil {
		stop()
		l.revoke(lease.ID)
		return nil, opError("acquire", l.key, err, false)
	}
	go v.track(ka, since)
	cs, err := concurrency.NewSession(l.cli, concurrency.WithLease(lease.ID))
	if err != nil {
		stop()
		l.revoke(lease.ID)
		return nil, opError("acquire", l.key, err, false)
	}
	s := &session{s: cs, stop: stop, v: v}
	l.mu.Lock()
	l.cur = s
	l.mu.Unlock()
	return s, nil
}

// revokeTimeout bounds the revoke of a session's lease after a failure: a
// lease not revoked expires after its TTL anyway.
const revokeTimeout = time.Second

// close ends s: no more keep-alives, the lease revoked (best effort), and
// s no longer current.
func (l *Lock) close(s *session) {
	s.stop()
	s.s.Orphan()
	l.revoke(s.s.Lease())
	l.mu.Lock()
	if l.cur == s {
		l.cur = nil
	}
	l.mu.Unlock()
}

func (l *Lock) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), revokeTimeout)
	defer cancel()
	_, _ = l.cli.Revoke(ctx, id)
}

// Unlock deletes the holder's key and revokes the session's lease. It
// returns [ErrReleased] without a grant, and a *[lockcore.OpError] if the
// delete failed (Indeterminate when it may have run); the lease is revoked
// either way, which deletes the key if the delete did not.
func (l *Lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	s := l.cur
	if s == nil || s.grant == nil {
		l.mu.Unlock()
		return ErrReleased
	}
	l.mu.Unlock()
	var err error
	switch {
	case s.m != nil:
		err = s.m.Unlock(ctx)
	case s.rw != nil:
		err = withContext(ctx, s.rw.Unlock)
	default:
		err = v3lockUnlock(ctx, l.cli, s.key)
	}
	l.close(s)
	if err != nil {
		return opError("release", s.key, err, true)
	}
	return nil
}

// Abandon stops renewing the current session's lease without releasing
// anything, as a client that crashed or froze: the lease, and with it the
// holder's (or waiter's) key, expires after its TTL. Called during Lock,
// the acquisition goes on and its result is as etcd decides; a grant held
// is forgotten (Unlock then returns [ErrReleased]). It may be called from
// any goroutine and is idempotent.
func (l *Lock) Abandon() {
	l.mu.Lock()
	s := l.cur
	if s != nil && s.grant != nil {
		l.cur = nil
	}
	l.mu.Unlock()
	if s != nil {
		s.stop()
		s.s.Orphan()
	}
}

// createRevision returns the create revision of m's key, as m compares it
// when it checks ownership.
func createRevision(m *concurrency.Mutex) int64 {
	c := m.IsOwner()
	if t, ok := c.TargetUnion.(*pb.Compare_CreateRevision); ok {
		return t.CreateRevision
	}
	return 0
}
