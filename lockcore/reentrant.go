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

// Redisson's reentrant lock, with the scripts of RedissonLock. The key is a
// hash from "<client id>:<thread id>" to a hold count. Acquiring creates or
// increments our field and resets the key's PTTL (one change: an acquire
// while this holder holds nothing sets the count to 1, see
// [ReentrantOptions].CountEveryAcquire); when another field holds
// the key the script returns its PTTL instead. Releasing decrements our
// field and, at zero, deletes the key and publishes on the lock's channel,
// which every waiter has subscribed to: a waiter sleeps until that message
// or until the PTTL it was told runs out, never polling. While the lock is
// held a watchdog resets the PTTL every third of the lease time.
var (
	reentrantAcquireScript = redis.NewScript(`
if (redis.call('exists', KEYS[1]) == 0) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  if (ARGV[3] == '1') then
    redis.call('hset', KEYS[1], ARGV[2], 1);
  else
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
  end;
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`)
	// reentrantFencedAcquireScript is the acquire script with a fencing
	// token, as Redisson's RFencedLock hands out: a fresh acquire
	// increments the counter at KEYS[2] and keeps its value in the hash
	// (field "fence", which no holder's "<id>:<thread>" can be); a
	// re-entry returns the same token ({0} for a hash an unfenced holder of
	// the same field created). Success is {token}; a lock held by another
	// returns its PTTL, as above.
	reentrantFencedAcquireScript = redis.NewScript(`
if (redis.call('exists', KEYS[1]) == 0) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  local f = redis.call('incr', KEYS[2]);
  redis.call('hset', KEYS[1], 'fence', f);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return {f};
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  if (ARGV[3] == '1') then
    redis.call('hset', KEYS[1], ARGV[2], 1);
  else
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
  end;
  redis.call('pexpire', KEYS[1], ARGV[1]);
  local f = redis.call('hget', KEYS[1], 'fence');
  if f then return {tonumber(f)} end;
  return {0};
end;
return redis.call('pttl', KEYS[1]);`)
	reentrantReleaseScript = redis.NewScript(`
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call('publish', KEYS[2], ARGV[1]);
  return 1;
end;
return nil;`)
	reentrantRenewScript = redis.NewScript(`
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;`)
)

// unlockMessage is what a release publishes (Redisson's LockPubSub.UNLOCK_MESSAGE).
const unlockMessage = "0"

// A Subscriber runs scripts and subscribes to pub/sub channels: what a
// [Reentrant] lock needs. *redis.Client and *redis.ClusterClient have it.
type Subscriber interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

var _ Subscriber = (*redis.Client)(nil)

// ReentrantOptions configures a [Reentrant]. Zero fields take their defaults.
type ReentrantOptions struct {
	// LeaseTime is the key's time to live. While the lock is held the
	// watchdog resets it every LeaseTime/3. default: 30s (Redisson's
	// lockWatchdogTimeout).
	LeaseTime time.Duration
	// NoWatchdog turns renewal off: the lock then lasts LeaseTime unless
	// extended, like Redisson's lock(leaseTime, unit).
	NoWatchdog bool
	// CountEveryAcquire makes every acquire that finds our own field
	// increment its count, as Redisson's script does. An acquire whose
	// reply was lost (dropped, or its connection reset) may still have run,
	// so its retry counts the lock twice: the holder's one Unlock then
	// leaves the key held, renewed by the watchdog, and nobody else gets
	// it. default: false: the first acquire after one whose outcome was
	// unknown, while this holder holds nothing, sets the count to 1.
	CountEveryAcquire bool
	// StopRenewingOnError makes the watchdog stop for good, silently, after
	// a renewal that fails with an error (a reset connection, a timeout) or
	// finds the key gone, as Redisson's renewExpiration does (it logs
	// "Can't update lock expiration" and drops the renewal): the holder is
	// not told (Lost() stays open), and the lease runs out under it. default: false (retry at the next tick
	// while a renewal could still land before the deadline, and give the
	// lease up, closing Lost(), as soon as none could: before the
	// deadline, so the holder can stop in time).
	StopRenewingOnError bool
	// ClientID identifies this client, like the UUID of Redisson's connection
	// manager. default: a random token.
	ClientID string
	// ThreadID identifies the holder within the client. The hash field is
	// ClientID:ThreadID; holders with the same field share the lock.
	// default: 1.
	ThreadID uint64
	// Fencing hands out a fencing token with every lease, as Redisson's
	// RFencedLock does: a counter at FenceKey, incremented by the acquire
	// that creates the lock; re-entries get the same token.
	Fencing bool
	// FenceKey is the fencing counter's key. default: as [Options].FenceKey.
	FenceKey string
	// Channel is the pub/sub channel releases are published on.
	// default: "redisson_lock__channel:{" + key + "}".
	Channel string
	// DriftFactor is the share of LeaseTime subtracted from the validity for
	// clock drift, on top of 2ms. default: 0.01.
	DriftFactor float64
	// Clock is the client's clock. default: [SystemClock].
	Clock Clock
	// OnRenew, if set, is called by the watchdog around each renewal: with
	// Done false just before it is sent, then with Done true and its
	// outcome. Renewals by [Reentrant.Extend] are not reported. It runs on
	// the watchdog's goroutine, which Unlock waits for, and must not block.
	// default: nil.
	OnRenew func(Renewal)
}

// A Renewal is one renewal of a lease by the watchdog, as reported to
// [ReentrantOptions].OnRenew.
type Renewal struct {
	Done       bool      // false: about to be sent; true: completed
	Token      string    // the lease's token, the holder's hash field
	ValidUntil time.Time // the lease's new deadline, on the client's clock, when Done and Err is nil
	// Err is the renewal's error when Done: [ErrNotHeld] when our field was
	// gone (the lease is then given up), an *[OpError] when Redis could not
	// be asked, nil on success.
	Err error

	_ struct{} // disallow positional literals, for extensibility
}

func (o *ReentrantOptions) withDefaults(key string) ReentrantOptions {
	var c ReentrantOptions
	if o != nil {
		c = *o
	}
	if c.LeaseTime <= 0 {
		c.LeaseTime = 30 * time.Second
	}
	if c.ClientID == "" {
		c.ClientID = RandomToken()
	}
	if c.ThreadID == 0 {
		c.ThreadID = 1
	}
	if c.FenceKey == "" {
		c.FenceKey = fenceKey(key)
	}
	if c.Channel == "" {
		c.Channel = "redisson_lock__channel:{" + key + "}"
	}
	if c.DriftFactor <= 0 {
		c.DriftFactor = 0.01
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	return c
}

// A Reentrant is Redisson's reentrant lock for one holder (a client and a
// thread of it): it may be locked again while held, and is released when
// Unlock has been called as often as Lock. It is safe for concurrent use.
type Reentrant struct {
	rdb   Subscriber
	key   string
	field string
	keys  []string // key, channel
	opt   ReentrantOptions

	mu    sync.Mutex
	lease *Lease
	holds int
	// unknown is set while the last acquire's outcome is unknown: it may
	// have set our field, which the next acquire then finds.
	unknown bool
	stop    chan struct{} // closed to stop the watchdog
	done    chan struct{} // closed when the watchdog has stopped
}

// NewReentrant returns a reentrant lock on key through rdb. opt may be nil.
func NewReentrant(rdb Subscriber, key string, opt *ReentrantOptions) *Reentrant {
	o := opt.withDefaults(key)
	return &Reentrant{
		rdb:   rdb,
		key:   key,
		field: o.ClientID + ":" + strconv.FormatUint(o.ThreadID, 10),
		keys:  []string{key, o.Channel},
		opt:   o,
	}
}

// Key returns the lock's key.
func (r *Reentrant) Key() string { return r.key }

// Field returns the hash field that marks this holder: ClientID:ThreadID.
func (r *Reentrant) Field() string { return r.field }

// Holds returns how many times the lock is held: Lock calls not yet
// matched by Unlock.
func (r *Reentrant) Holds() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holds
}

// Lease returns the current lease, or nil when the lock is not held. A
// re-entered lock keeps its lease; its Token is the hash field.
func (r *Reentrant) Lease() *Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// TryLock makes one attempt. It returns [ErrNotAcquired] when another
// holder has the key, or an *[OpError] when Redis could not be asked.
func (r *Reentrant) TryLock(ctx context.Context) (*Lease, error) {
	lease, _, err := r.try(ctx)
	if lease == nil && err == nil {
		return nil, ErrNotAcquired
	}
	return lease, err
}

// Lock acquires the lock, waiting as long as ctx allows. While the lock is
// held elsewhere it subscribes to the lock's channel and sleeps until a
// release is published there or the holder's PTTL runs out. It returns an
// error matching [ErrNotAcquired] and ctx.Err() when ctx ends first, and an
// *[OpError] when Redis could not be asked.
func (r *Reentrant) Lock(ctx context.Context) (*Lease, error) {
	lease, _, err := r.try(ctx)
	if lease != nil || err != nil {
		return lease, r.lockError(ctx, err)
	}
	ps := r.rdb.Subscribe(ctx, r.opt.Channel)
	defer ps.Close()
	// Wait for the confirmation: a release published before it is not seen.
	if _, err := ps.Receive(ctx); err != nil {
		return nil, r.lockError(ctx, NewOpError("subscribe", r.key, err))
	}
	msgs := ps.Channel()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		lease, ttl, err := r.try(ctx)
		if lease != nil || err != nil {
			return lease, r.lockError(ctx, err)
		}
		switch {
		case ttl < 0 || ttl > r.opt.LeaseTime:
			ttl = r.opt.LeaseTime // the holder's key has no expiry; check now and then
		case ttl == 0:
			ttl = time.Millisecond // PTTL rounds down: the key expires within the millisecond
		}
		timer.Reset(ttl)
		select {
		case <-msgs:
		case <-timer.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, ctx.Err())
		}
	}
}

// lockError is err, or, when ctx ended and cut the call short, an error
// matching [ErrNotAcquired], ctx.Err() and err.
func (r *Reentrant) lockError(ctx context.Context, err error) error {
	if cerr := ctxErr(ctx); err != nil && cerr != nil {
		return fmt.Errorf("%w: %w: %w", ErrNotAcquired, cerr, err)
	}
	return err
}

// try runs the acquire script once. It returns the lease when acquired,
// else the holder's remaining PTTL.
func (r *Reentrant) try(ctx context.Context) (*Lease, time.Duration, error) {
	sent := r.opt.Clock.Now()
	fresh := "0"
	r.mu.Lock()
	if !r.opt.CountEveryAcquire && r.holds == 0 && r.unknown {
		fresh = "1" // our field, if there, is the lost reply's leftover
	}
	r.mu.Unlock()
	var (
		acquired bool
		ttl      time.Duration
		fence    int64
		err      error
	)
	if r.opt.Fencing {
		acquired, ttl, fence, err = parseFencedAcquireReply(reentrantFencedAcquireScript.Run(ctx, r.rdb,
			[]string{r.key, r.opt.FenceKey}, r.opt.LeaseTime.Milliseconds(), r.field, fresh).Result())
	} else {
		acquired, ttl, err = parseAcquireReply(reentrantAcquireScript.Run(ctx, r.rdb, r.keys[:1:1],
			r.opt.LeaseTime.Milliseconds(), r.field, fresh).Result())
	}
	if err != nil {
		oerr := NewOpError("acquire", r.key, err)
		if MayHaveRun(oerr) {
			r.mu.Lock()
			r.unknown = true
			r.mu.Unlock()
		}
		return nil, 0, oerr
	}
	r.mu.Lock()
	r.unknown = false
	r.mu.Unlock()
	if !acquired {
		return nil, ttl, nil
	}
	validity := r.opt.LeaseTime - drift(r.opt.LeaseTime, r.opt.DriftFactor)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds++
	if r.lease != nil {
		r.lease.extendTo(sent.Add(validity))
		return r.lease, 0, nil
	}
	r.lease = newLease(r.key, r.field, fence, sent, validity)
	if !r.opt.NoWatchdog {
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.watchdog(r.lease, r.stop, r.done)
	}
	return r.lease, 0, nil
}

// Unlock releases one hold. The last one deletes the key, publishes the
// release and stops the watchdog. It returns [ErrReleased] without a lease,
// [ErrNotHeld] (and gives the lease up) when our field was gone, and an
// *[OpError] when Redis could not be asked; a failed last release still
// stops the watchdog and gives the lease up.
func (r *Reentrant) Unlock(ctx context.Context) error {
	r.mu.Lock()
	lease, last := r.lease, r.holds == 1
	r.mu.Unlock()
	if lease == nil {
		return ErrReleased
	}
	outcome, err := parseReleaseReply(reentrantReleaseScript.Run(ctx, r.rdb, r.keys,
		unlockMessage, r.opt.LeaseTime.Milliseconds(), r.field).Result())
	switch {
	case err != nil:
		if last {
			r.drop(lease)
		}
		return NewOpError("release", r.key, err)
	case outcome == releaseNotHeld:
		r.drop(lease)
		return ErrNotHeld
	case outcome == releaseDone:
		r.drop(lease)
		return nil
	}
	r.mu.Lock()
	if r.lease == lease && r.holds > 1 {
		r.holds--
	}
	r.mu.Unlock()
	return nil
}

// Extend resets the key's PTTL to LeaseTime, as the watchdog does, and moves
// the lease's deadline. It returns [ErrNotHeld] (and gives the lease up)
// when our field is gone.
func (r *Reentrant) Extend(ctx context.Context) error {
	lease := r.Lease()
	if lease == nil {
		return ErrReleased
	}
	_, err := r.renew(ctx, lease)
	if errors.Is(err, ErrNotHeld) {
		r.drop(lease)
	}
	return err
}

// Abandon stops the watchdog and forgets the lease without releasing it, as
// a crashed client would: the key stays until its PTTL runs out.
func (r *Reentrant) Abandon() {
	r.mu.Lock()
	done := r.reset()
	r.mu.Unlock()
	if done != nil {
		<-done
	}
}

// renew resets the key's PTTL if our field holds it and moves the lease's
// deadline, which it returns.
func (r *Reentrant) renew(ctx context.Context, lease *Lease) (time.Time, error) {
	sent := r.opt.Clock.Now()
	n, err := reentrantRenewScript.Run(ctx, r.rdb, r.keys[:1:1], r.opt.LeaseTime.Milliseconds(), r.field).Int64()
	if err != nil {
		return time.Time{}, NewOpError("extend", r.key, err)
	}
	if n == 0 {
		return time.Time{}, ErrNotHeld
	}
	until := sent.Add(r.opt.LeaseTime - drift(r.opt.LeaseTime, r.opt.DriftFactor))
	lease.extendTo(until)
	return until, nil
}

// watchdog renews lease every LeaseTime/3 until stop is closed, reporting
// each renewal to OnRenew. It gives the lease up, after reporting, when a
// renewal finds our field gone, or when renewals fail until the lease's
// deadline passes.
func (r *Reentrant) watchdog(lease *Lease, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	every := r.opt.LeaseTime / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if r.opt.OnRenew != nil {
			r.opt.OnRenew(Renewal{Token: lease.Token})
		}
		// A renewal never outlives the lease it renews, so a holder is
		// told before its deadline (see below).
		left := lease.ValidUntil().Sub(r.opt.Clock.Now())
		ctx, cancel := context.WithTimeout(context.Background(), max(min(every, left), time.Millisecond))
		until, err := r.renew(ctx, lease)
		cancel()
		if r.opt.OnRenew != nil {
			r.opt.OnRenew(Renewal{Done: true, Token: lease.Token, ValidUntil: until, Err: err})
		}
		if err != nil && r.opt.StopRenewingOnError {
			// Redisson: a failed renewal, or one that found the key gone,
			// stops the watchdog; the lease is left to run out, untold.
			return
		}
		// After a failed renewal, the lease is given up (Lost closed) as
		// soon as the next try could not finish before the deadline: the
		// holder hears of it while its lease still runs, not after.
		if errors.Is(err, ErrNotHeld) || (err != nil && !r.opt.Clock.Now().Add(every).Before(lease.ValidUntil())) {
			r.mu.Lock()
			if r.lease == lease {
				r.reset()
			}
			r.mu.Unlock()
			lease.markLost()
			return
		}
	}
}

// drop gives lease up if it is still the current one, waits for its
// watchdog to stop (unless called by it), and closes Lost().
func (r *Reentrant) drop(lease *Lease) {
	r.mu.Lock()
	var done chan struct{}
	if r.lease == lease {
		done = r.reset()
	}
	r.mu.Unlock()
	if done != nil {
		<-done
	}
	lease.markLost()
}

// reset forgets the lease and stops its watchdog; the caller holds r.mu and
// may wait on the returned channel (nil without a watchdog) after
// unlocking.
func (r *Reentrant) reset() chan struct{} {
	r.lease, r.holds = nil, 0
	done := r.done
	if r.stop != nil {
		close(r.stop)
	}
	r.stop, r.done = nil, nil
	return done
}
