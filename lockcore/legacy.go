package lockcore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The legacy locks still copied from blog posts, kept so that lockpick can
// show how they break.
//
// [SetNXExpire] sends SETNX and then EXPIRE as two commands: a client that
// dies between them leaves a key that never expires, and the lock is stuck.
//
// [GetSetLock] stores its expiry as a wall-clock timestamp in the value and
// has no TTL. A contender that reads an expired timestamp takes over with
// GETSET, and wins if GETSET returned the timestamp it read. Expiry is
// judged on each client's clock, so a client whose clock runs ahead takes
// over a lock its holder still believes valid; and release is a bare DEL,
// so a holder that overran its expiry deletes its successor's lock.

// A LegacyClient sends the plain commands the legacy locks use.
// *redis.Client has them.
type LegacyClient interface {
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	Expire(ctx context.Context, key string, expiration time.Duration) *redis.BoolCmd
	Get(ctx context.Context, key string) *redis.StringCmd
	GetSet(ctx context.Context, key string, value any) *redis.StringCmd
	Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

var _ LegacyClient = (*redis.Client)(nil)

// LegacyOptions configures a [SetNXExpire] or a [GetSetLock]. Zero fields
// take their defaults.
type LegacyOptions struct {
	// TTL is how long the lock lasts: the EXPIRE of SetNXExpire, the offset
	// of GetSetLock's timestamp. default: 10s.
	TTL time.Duration
	// RetryDelay is the pause between attempts in Lock. default: 50ms.
	RetryDelay time.Duration
	// AfterSetNX, if set, runs between SetNXExpire's SETNX and EXPIRE. When
	// it returns an error, TryLock stops there and returns it, as a crashed
	// client would: the key is left without a TTL. A worker process may
	// also just exit in it.
	AfterSetNX func(ctx context.Context) error
	// Clock is the client's clock; GetSetLock writes and compares its wall
	// time. default: [SystemClock].
	Clock Clock
	// Token returns SetNXExpire's value. default: [RandomToken].
	Token func() string
	// NaiveRecovery makes GetSetLock take over an expired lock with DEL
	// and then SETNX, the recovery seed 002 warns against: two contenders
	// that both read the expired timestamp both delete and both win.
	NaiveRecovery bool
	// RecoveryPause makes GetSetLock wait this long between reading an
	// expired timestamp and taking the lock over (a slow client), so that
	// contenders which read it at about the same time race for it.
	RecoveryPause time.Duration
	// CheckBeforeDel makes GetSetLock's Unlock first check, on Clock, that
	// its own lock has not expired, and skip the DEL if it has (seed
	// 002's advice: a holder that hung may find its lock taken over). The
	// check and the DEL are two steps, not one atomic command.
	CheckBeforeDel bool
	// DelPause makes that Unlock wait this long between its check and its
	// DEL (a slow client), so the lock can expire, and be taken over,
	// between the two. It needs CheckBeforeDel.
	DelPause time.Duration
}

func (o *LegacyOptions) withDefaults() LegacyOptions {
	var c LegacyOptions
	if o != nil {
		c = *o
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = 50 * time.Millisecond
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Token == nil {
		c.Token = RandomToken
	}
	return c
}

// holder keeps the current lease of a lock.
type holder struct {
	mu    sync.Mutex
	lease *Lease
}

func (h *holder) get() *Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

func (h *holder) set(l *Lease) {
	h.mu.Lock()
	h.lease = l
	h.mu.Unlock()
}

func (h *holder) take() *Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.lease
	h.lease = nil
	return l
}

// A SetNXExpire is the naive lock that sends SETNX, then EXPIRE, and
// releases with a bare DEL. It is safe for concurrent use.
type SetNXExpire struct {
	rdb LegacyClient
	key string
	opt LegacyOptions
	holder
}

// NewSetNXExpire returns a SETNX-then-EXPIRE lock on key. opt may be nil.
func NewSetNXExpire(rdb LegacyClient, key string, opt *LegacyOptions) *SetNXExpire {
	return &SetNXExpire{rdb: rdb, key: key, opt: opt.withDefaults()}
}

// Key returns the lock's key.
func (l *SetNXExpire) Key() string { return l.key }

// Lease returns the current lease, or nil when the lock is not held.
func (l *SetNXExpire) Lease() *Lease { return l.get() }

// TryLock sends SETNX, runs AfterSetNX, then sends EXPIRE. It returns
// [ErrNotAcquired] when the key exists, AfterSetNX's error, or an
// *[OpError] when Redis could not be asked (after a failed EXPIRE the key
// has no TTL).
func (l *SetNXExpire) TryLock(ctx context.Context) (*Lease, error) {
	token := l.opt.Token()
	sent := l.opt.Clock.Now()
	ok, err := l.rdb.SetNX(ctx, l.key, token, 0).Result()
	if err != nil {
		return nil, NewOpError("acquire", l.key, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	if l.opt.AfterSetNX != nil {
		if err := l.opt.AfterSetNX(ctx); err != nil {
			return nil, err
		}
	}
	if err := l.rdb.Expire(ctx, l.key, l.opt.TTL).Err(); err != nil {
		return nil, NewOpError("expire", l.key, err)
	}
	lease := newLease(l.key, token, 0, sent, l.opt.TTL)
	l.set(lease)
	return lease, nil
}

// Lock retries [SetNXExpire.TryLock] every RetryDelay until it succeeds,
// fails with something other than [ErrNotAcquired], or ctx ends.
func (l *SetNXExpire) Lock(ctx context.Context) (*Lease, error) {
	return retry(ctx, l.opt.RetryDelay, l.TryLock)
}

// Unlock deletes the key, whoever holds it now. It returns [ErrReleased]
// without a lease and [ErrNotHeld] when the key was already gone.
func (l *SetNXExpire) Unlock(ctx context.Context) error { return bareDel(ctx, l.rdb, l.key, l.take()) }

// Extend sends EXPIRE again, whoever holds the key now. It returns
// [ErrNotHeld] when the key is gone.
func (l *SetNXExpire) Extend(ctx context.Context) error {
	lease := l.get()
	if lease == nil {
		return ErrReleased
	}
	sent := l.opt.Clock.Now()
	ok, err := l.rdb.Expire(ctx, l.key, l.opt.TTL).Result()
	if err != nil {
		return NewOpError("extend", l.key, err)
	}
	if !ok {
		l.take()
		lease.markLost()
		return ErrNotHeld
	}
	lease.extendTo(sent.Add(l.opt.TTL))
	return nil
}

// Abandon forgets the lease without releasing it, as a crashed client would.
func (l *SetNXExpire) Abandon() { l.take() }

// A GetSetLock is the SETNX + GETSET lock with the expiry timestamp, in
// milliseconds since the Unix epoch on the client's clock, as the value.
// It is safe for concurrent use.
type GetSetLock struct {
	rdb LegacyClient
	key string
	opt LegacyOptions
	holder
	stamp string // the timestamp last written, guarded by holder.mu
}

// NewGetSetLock returns a SETNX + GETSET timestamp lock on key. opt may be nil.
func NewGetSetLock(rdb LegacyClient, key string, opt *LegacyOptions) *GetSetLock {
	return &GetSetLock{rdb: rdb, key: key, opt: opt.withDefaults()}
}

// Key returns the lock's key.
func (l *GetSetLock) Key() string { return l.key }

// Lease returns the current lease, or nil when the lock is not held. Its
// Token is the expiry timestamp TryLock wrote.
func (l *GetSetLock) Lease() *Lease { return l.get() }

// TryLock sets the key to now+TTL with SETNX; failing that, if the stored
// timestamp is in the past by this client's clock, it takes the lock over
// with GETSET. It returns [ErrNotAcquired] when the lock is held and not
// expired (or another client took it over first), or an *[OpError].
func (l *GetSetLock) TryLock(ctx context.Context) (*Lease, error) {
	sent := l.opt.Clock.Now()
	stamp := strconv.FormatInt(sent.Add(l.opt.TTL).UnixMilli()+1, 10)
	ok, err := l.rdb.SetNX(ctx, l.key, stamp, 0).Result()
	if err != nil {
		return nil, NewOpError("acquire", l.key, err)
	}
	if !ok {
		cur, err := l.rdb.Get(ctx, l.key).Result()
		if errors.Is(err, redis.Nil) {
			return nil, ErrNotAcquired // released meanwhile: the next attempt may SETNX
		}
		if err != nil {
			return nil, NewOpError("acquire", l.key, err)
		}
		if expiry, perr := strconv.ParseInt(cur, 10, 64); perr == nil && expiry >= sent.UnixMilli() {
			return nil, ErrNotAcquired
		}
		if err := sleepCtx(ctx, l.opt.RecoveryPause); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
		}
		if l.opt.NaiveRecovery {
			if err := l.takeOverNaively(ctx, stamp); err != nil {
				return nil, err
			}
		} else {
			old, err := l.rdb.GetSet(ctx, l.key, stamp).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, NewOpError("acquire", l.key, err)
			}
			if old != cur {
				// Someone else took it over first, and this GETSET
				// overwrote the winner's timestamp with ours.
				return nil, fmt.Errorf("%w: another client took the expired lock over first; this GETSET moved its expiry by %s", ErrNotAcquired, stampDelta(old, stamp))
			}
		}
	}
	lease := newLease(l.key, stamp, 0, sent, l.opt.TTL)
	l.mu.Lock()
	l.lease, l.stamp = lease, stamp
	l.mu.Unlock()
	return lease, nil
}

// takeOverNaively deletes the expired key and sets it again with SETNX.
func (l *GetSetLock) takeOverNaively(ctx context.Context, stamp string) error {
	if err := l.rdb.Del(ctx, l.key).Err(); err != nil {
		return NewOpError("acquire", l.key, err)
	}
	ok, err := l.rdb.SetNX(ctx, l.key, stamp, 0).Result()
	if err != nil {
		return NewOpError("acquire", l.key, err)
	}
	if !ok {
		return ErrNotAcquired
	}
	return nil
}

// stampDelta returns how far timestamp to (ms) lies after from, e.g.
// "+12ms", or "an unknown amount" if either is not a number.
func stampDelta(from, to string) string {
	a, err1 := strconv.ParseInt(from, 10, 64)
	b, err2 := strconv.ParseInt(to, 10, 64)
	if err1 != nil || err2 != nil {
		return "an unknown amount"
	}
	return fmt.Sprintf("%+dms", b-a)
}

// sleepCtx waits d, or returns ctx's error if it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lock retries [GetSetLock.TryLock] every RetryDelay until it succeeds,
// fails with something other than [ErrNotAcquired], or ctx ends.
func (l *GetSetLock) Lock(ctx context.Context) (*Lease, error) {
	return retry(ctx, l.opt.RetryDelay, l.TryLock)
}

// Unlock deletes the key with a bare DEL, as the original does: a holder
// that overran its expiry deletes its successor's lock. With
// CheckBeforeDel it first checks its own expiry on its clock and returns
// [ErrExpired], deleting nothing, once that has passed; a check that
// passes is no guarantee, as the lock may expire before the DEL (see
// DelPause). It returns [ErrReleased] without a lease and [ErrNotHeld]
// when the key was gone.
func (l *GetSetLock) Unlock(ctx context.Context) error {
	lease := l.take()
	if lease != nil && l.opt.CheckBeforeDel {
		if !l.opt.Clock.Now().Before(lease.ValidUntil()) {
			lease.markLost()
			return ErrExpired
		}
		if err := sleepCtx(ctx, l.opt.DelPause); err != nil {
			lease.markLost()
			return &OpError{Op: "release", Key: l.key, Err: err} // the DEL was never sent
		}
	}
	return bareDel(ctx, l.rdb, l.key, lease)
}

// Extend writes a new timestamp if the key still holds ours (GET, then SET:
// not atomic, like the rest of this lock). It returns [ErrNotHeld] when it
// does not.
func (l *GetSetLock) Extend(ctx context.Context) error {
	lease := l.get()
	if lease == nil {
		return ErrReleased
	}
	sent := l.opt.Clock.Now()
	cur, err := l.rdb.Get(ctx, l.key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return NewOpError("extend", l.key, err)
	}
	l.mu.Lock()
	mine := l.lease == lease && cur == l.stamp
	l.mu.Unlock()
	if !mine {
		l.take()
		lease.markLost()
		return ErrNotHeld
	}
	stamp := strconv.FormatInt(sent.Add(l.opt.TTL).UnixMilli()+1, 10)
	if err := l.rdb.Set(ctx, l.key, stamp, 0).Err(); err != nil {
		return NewOpError("extend", l.key, err)
	}
	l.mu.Lock()
	l.stamp = stamp
	l.mu.Unlock()
	lease.extendTo(sent.Add(l.opt.TTL))
	return nil
}

// Abandon forgets the lease without releasing it, as a crashed client would.
func (l *GetSetLock) Abandon() { l.take() }

// bareDel releases a legacy lock with a plain DEL, whoever holds the key:
// the unconditional release both legacy locks are known for.
func bareDel(ctx context.Context, rdb LegacyClient, key string, lease *Lease) error {
	if lease == nil {
		return ErrReleased
	}
	defer lease.markLost()
	n, err := rdb.Del(ctx, key).Result()
	if err != nil {
		return NewOpError("release", key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
