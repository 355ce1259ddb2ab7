package lockcore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/lockcore"
)

func TestReentrant_Reentrancy(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	opt := &lockcore.ReentrantOptions{LeaseTime: 5 * time.Second, ClientID: "c1"}
	a := lockcore.NewReentrant(rdb[0], "lock", opt)
	other := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{ClientID: "c1", ThreadID: 2})

	first, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		lease, err := a.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if lease != first {
			t.Error("re-entering returned a new lease")
		}
	}
	if got, want := a.Holds(), 3; got != want {
		t.Errorf("Holds() = %d, want %d", got, want)
	}
	if got, want := rdb[0].HGet(ctx, "lock", "c1:1").Val(), "3"; got != want {
		t.Errorf("hash field c1:1 = %q, want %q", got, want)
	}
	if _, err := other.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("another thread's TryLock: err = %v, want ErrNotAcquired", err)
	}

	for want := 2; want >= 1; want-- {
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if got := rdb[0].HGet(ctx, "lock", "c1:1").Val(); got != string(rune('0'+want)) {
			t.Errorf("after an Unlock: field = %q, want %d", got, want)
		}
	}
	select {
	case <-first.Lost():
		t.Fatal("Lost() closed while still held once")
	default:
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb[0].Exists(ctx, "lock").Val(); n != 0 {
		t.Error("key still there after the last Unlock")
	}
	select {
	case <-first.Lost():
	default:
		t.Error("Lost() not closed after the last Unlock")
	}
	if err := a.Unlock(ctx); !errors.Is(err, lockcore.ErrReleased) {
		t.Errorf("extra Unlock: err = %v, want ErrReleased", err)
	}
	if _, err := other.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
	_ = other.Unlock(ctx)
}

// waitSubscribed waits until n clients are subscribed to channel.
func waitSubscribed(tb testing.TB, rdb *redis.Client, channel string, n int64) {
	tb.Helper()
	if !eventually(tb, 5*time.Second, func() bool {
		return rdb.PubSubNumSub(context.Background(), channel).Val()[channel] == n
	}) {
		tb.Fatalf("%d subscribers to %s never showed up", n, channel)
	}
}

// TestReentrant_PubSubWakeup: a waiter wakes on the release's message, far
// sooner than a spin lock polling every 200ms (100ms late on average) would.
func TestReentrant_PubSubWakeup(t *testing.T) {
	const spinPoll, tolerance = 200 * time.Millisecond, 50 * time.Millisecond
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 10 * time.Second})
	b := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 10 * time.Second})
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	acquired := make(chan time.Time, 1)
	go func() {
		if _, err := b.Lock(ctx); err != nil {
			t.Error(err)
		}
		acquired <- time.Now()
	}()
	waitSubscribed(t, rdb[0], "redisson_lock__channel:{lock}", 1)

	released := time.Now()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-acquired:
		got := at.Sub(released)
		t.Logf("waiter acquired %v after the release", got)
		if got > tolerance {
			t.Errorf("waiter acquired %v after the release, want < %v (spin poll: %v)", got, tolerance, spinPoll)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter still waiting 5s after the release (its wait should end on the message)")
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReentrant_WaitsAtMostPTTL: when the holder dies without releasing (no
// message), a waiter wakes when the holder's PTTL runs out.
func TestReentrant_WaitsAtMostPTTL(t *testing.T) {
	const lease = 300 * time.Millisecond
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: lease})
	b := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 10 * time.Second})
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	a.Abandon()
	start := time.Now()
	if _, err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got > lease+500*time.Millisecond {
		t.Errorf("waited %v for a key with PTTL ≤ %v", got, lease)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestReentrant_LockContextEnds(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 10 * time.Second})
	b := lockcore.NewReentrant(rdb[0], "lock", nil)
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short); !errors.Is(err, lockcore.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNotAcquired and DeadlineExceeded", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReentrant_Watchdog: the watchdog keeps a 300ms lease alive across 3×
// its lease time, and stops after the release.
func TestReentrant_Watchdog(t *testing.T) {
	const leaseTime = 300 * time.Millisecond
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: leaseTime, ClientID: "c1"})
	lease, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 3*leaseTime+100*time.Millisecond; time.Sleep(20 * time.Millisecond) {
		if rdb[0].Exists(ctx, "lock").Val() != 1 {
			t.Fatalf("key expired %v after Lock despite the watchdog", time.Since(start))
		}
		select {
		case <-lease.Lost():
			t.Fatal("Lost() closed while the watchdog renews")
		default:
		}
	}
	if got := time.Until(lease.ValidUntil()); got <= 0 {
		t.Errorf("lease deadline %v in the past: renewals did not move it", got)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Put our field back with a short PTTL: a watchdog still running would
	// renew it to the full lease time, again and again.
	rdb[0].HSet(ctx, "lock", "c1:1", 1)
	rdb[0].PExpire(ctx, "lock", 150*time.Millisecond)
	if !eventually(t, 3*leaseTime, func() bool { return rdb[0].Exists(ctx, "lock").Val() == 0 }) {
		t.Error("key renewed after Unlock: the watchdog did not stop")
	}
}

// TestReentrant_WatchdogLost: a renewal that finds the key gone closes Lost().
func TestReentrant_WatchdogLost(t *testing.T) {
	const leaseTime = 300 * time.Millisecond
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: leaseTime})
	lease, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb[0].Del(ctx, "lock")
	select {
	case <-lease.Lost():
	case <-time.After(2 * leaseTime):
		t.Fatal("Lost() not closed after the key disappeared")
	}
	if a.Lease() != nil {
		t.Error("Lease() still set after the loss")
	}
	if err := a.Unlock(ctx); !errors.Is(err, lockcore.ErrReleased) {
		t.Errorf("Unlock after the loss: err = %v, want ErrReleased", err)
	}
}

// TestReentrant_OnRenew: the watchdog reports each renewal before sending
// it and again with its outcome, moving the deadline forward, and reports
// ErrNotHeld once the key has been deleted behind its back.
func TestReentrant_OnRenew(t *testing.T) {
	const leaseTime = 300 * time.Millisecond
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	renewals := make(chan lockcore.Renewal, 1000) // ~6 a lease time: never fills before the test reads
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{
		LeaseTime: leaseTime,
		OnRenew:   func(r lockcore.Renewal) { renewals <- r },
	})
	lease, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// next returns the next report, which must be done or not as asked.
	next := func(done bool) lockcore.Renewal {
		t.Helper()
		select {
		case r := <-renewals:
			if r.Done != done {
				t.Fatalf("renewal %+v: Done = %v, want %v", r, r.Done, done)
			}
			if got, want := r.Token, lease.Token; got != want {
				t.Errorf("renewal token %q, want %q", got, want)
			}
			return r
		case <-time.After(2 * leaseTime):
			t.Fatalf("no renewal reported within %v", 2*leaseTime)
			return lockcore.Renewal{}
		}
	}

	last := lease.Acquired
	for range 3 {
		next(false)
		r := next(true)
		if r.Err != nil {
			t.Fatalf("renewal failed: %v", r.Err)
		}
		if !r.ValidUntil.After(last) {
			t.Errorf("renewal deadline %v not after the previous one %v", r.ValidUntil, last)
		}
		last = r.ValidUntil
	}
	if got := lease.ValidUntil(); got.Before(last) {
		t.Errorf("lease deadline %v before the last reported %v", got, last)
	}

	rdb[0].Del(ctx, "lock")
	for {
		next(false)
		r := next(true)
		if r.Err == nil {
			continue // sent before the key was deleted
		}
		if !errors.Is(r.Err, lockcore.ErrNotHeld) {
			t.Fatalf("renewal after the delete: err = %v, want ErrNotHeld", r.Err)
		}
		if !r.ValidUntil.IsZero() {
			t.Errorf("failed renewal reports deadline %v, want none", r.ValidUntil)
		}
		break
	}
	select {
	case <-lease.Lost():
	case <-time.After(time.Second):
		t.Fatal("Lost() not closed after the renewal found the key gone")
	}
	if err := a.Unlock(ctx); !errors.Is(err, lockcore.ErrReleased) {
		t.Errorf("Unlock after the loss: err = %v, want ErrReleased", err)
	}
	select {
	case r := <-renewals:
		t.Errorf("renewal %+v reported after the watchdog gave the lease up", r)
	default:
	}
}

// TestReentrant_ExtendNotReported: OnRenew hears only from the watchdog,
// not from an explicit Extend.
func TestReentrant_ExtendNotReported(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	var reports int
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{
		NoWatchdog: true,
		OnRenew:    func(lockcore.Renewal) { reports++ },
	})
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if reports != 0 {
		t.Errorf("OnRenew called %d times by Extend, want 0", reports)
	}
}

// TestReentrant_AcquireFindsItsOwnLeftover: an acquire whose reply was
// lost has run, leaving our field at 1; the retry, made while the holder
// holds nothing, must not count the lock twice, or its one Unlock leaves
// the key held. Redisson's script (CountEveryAcquire) counts it twice.
func TestReentrant_AcquireFindsItsOwnLeftover(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	for _, every := range []bool{false, true} {
		r := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 5 * time.Second, NoWatchdog: true, CountEveryAcquire: every})
		// An acquire whose outcome is unknown: it times out during a pause.
		if err := rdb[0].Do(ctx, "client", "pause", 200, "write").Err(); err != nil {
			t.Fatal(err)
		}
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := r.TryLock(tctx)
		cancel()
		if !lockcore.MayHaveRun(err) {
			t.Fatalf("acquire during the pause: %v, want an unknown outcome", err)
		}
		time.Sleep(250 * time.Millisecond)
		// go-redis dropped it with its connection; a client that kept the
		// connection would have had it run: set the field as it would have.
		if err := rdb[0].HSet(ctx, "lock", r.Field(), 1).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		count, _ := rdb[0].HGet(ctx, "lock", r.Field()).Int()
		if err := r.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		left, _ := rdb[0].Exists(ctx, "lock").Result()
		switch {
		case !every && (count != 1 || left != 0):
			t.Errorf("hold count %d after the retry, key left after Unlock: %v; want 1 and none", count, left == 1)
		case every && (count != 2 || left != 1):
			t.Errorf("CountEveryAcquire: hold count %d, key left: %v; want Redisson's 2, still held", count, left == 1)
		}
		_ = rdb[0].Del(ctx, "lock").Err()
	}
	// A real re-entry still counts, and so does a holder sharing the field
	// (same client and thread id) that holds nothing itself.
	r := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 5 * time.Second, NoWatchdog: true, ClientID: "c"})
	for range 2 {
		if _, err := r.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if count, _ := rdb[0].HGet(ctx, "lock", r.Field()).Int(); count != 2 || r.Holds() != 2 {
		t.Errorf("re-entered twice: count %d, Holds %d; want 2 and 2", count, r.Holds())
	}
	shared := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 5 * time.Second, NoWatchdog: true, ClientID: "c"})
	if _, err := shared.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if count, _ := rdb[0].HGet(ctx, "lock", r.Field()).Int(); count != 3 {
		t.Errorf("a holder sharing the field: count %d, want 3", count)
	}
}

func TestReentrant_Fencing(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 5 * time.Second, Fencing: true, NoWatchdog: true})
	b := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: 5 * time.Second, Fencing: true, NoWatchdog: true})
	var last int64
	for round := range 3 {
		first, err := a.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		again, err := a.Lock(ctx) // a re-entry keeps the token
		if err != nil || again.Fence != first.Fence {
			t.Fatalf("re-entry: fence %d, %v; want %d", again.Fence, err, first.Fence)
		}
		if first.Fence <= last {
			t.Fatalf("round %d: fence %d after %d", round, first.Fence, last)
		}
		if _, err := b.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
			t.Fatalf("another holder's TryLock: %v", err)
		}
		for range 2 {
			if err := a.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		lb, err := b.TryLock(ctx)
		if err != nil || lb.Fence != first.Fence+1 {
			t.Fatalf("the next holder's fence %v, %v; want %d", lb, err, first.Fence+1)
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		last = lb.Fence
	}
	if got := rdb[0].Get(ctx, "{lock}:fence").Val(); got != "6" {
		t.Fatalf("counter {lock}:fence = %q, want 6", got)
	}
}

// TestReentrant_LostBeforeDeadline: with the node black-holed, renewals
// fail, and the watchdog closes Lost() before the lease's deadline, not
// after it.
func TestReentrant_LostBeforeDeadline(t *testing.T) {
	const leaseTime = 600 * time.Millisecond
	c, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewReentrant(rdb[0], "lock", &lockcore.ReentrantOptions{LeaseTime: leaseTime})
	lease, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cut := &faults.PartitionFault{}
	if err := cut.Inject(ctx, c.Nodes[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cut.Heal(context.Background(), c.Nodes[0]) })
	select {
	case <-lease.Lost():
	case <-time.After(3 * leaseTime):
		t.Fatal("Lost() not closed while renewals failed")
	}
	if now, until := time.Now(), lease.ValidUntil(); !now.Before(until) {
		t.Fatalf("Lost() closed %v after the deadline", now.Sub(until))
	}
}
