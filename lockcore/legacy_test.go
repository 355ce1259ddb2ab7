package lockcore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockpick/lockpick/lockcore"
)

func TestSetNXExpire_TryLock(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewSetNXExpire(rdb[0], "lock", &lockcore.LegacyOptions{TTL: 5 * time.Second})
	b := lockcore.NewSetNXExpire(rdb[0], "lock", nil)
	if _, err := a.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rdb[0].PTTL(ctx, "lock").Val(); got <= 0 || got > 5*time.Second {
		t.Errorf("PTTL = %v, want the 5s TTL", got)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("second TryLock: err = %v, want ErrNotAcquired", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
}

// TestSetNXExpire_CrashBetween: a client that dies between SETNX and EXPIRE
// leaves a key without TTL, and nobody gets the lock again.
func TestSetNXExpire_CrashBetween(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	errCrash := errors.New("crashed")
	a := lockcore.NewSetNXExpire(rdb[0], "lock", &lockcore.LegacyOptions{
		TTL:        100 * time.Millisecond,
		AfterSetNX: func(context.Context) error { return errCrash },
	})
	if _, err := a.TryLock(ctx); !errors.Is(err, errCrash) {
		t.Fatalf("err = %v, want the hook's error", err)
	}
	if got, want := rdb[0].PTTL(ctx, "lock").Val(), time.Duration(-1); got != want {
		t.Errorf("PTTL = %v, want %v (no expiry)", got, want)
	}
	b := lockcore.NewSetNXExpire(rdb[0], "lock", &lockcore.LegacyOptions{RetryDelay: 10 * time.Millisecond})
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // 3× the TTL a would have set
	defer cancel()
	if _, err := b.Lock(short); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("Lock on the stuck key: err = %v, want ErrNotAcquired", err)
	}
}

func TestGetSetLock_TryLock(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewGetSetLock(rdb[0], "lock", &lockcore.LegacyOptions{TTL: 5 * time.Second})
	b := lockcore.NewGetSetLock(rdb[0], "lock", &lockcore.LegacyOptions{TTL: 5 * time.Second})
	lease, err := a.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := rdb[0].Get(ctx, "lock").Val(); got != lease.Token {
		t.Errorf("value = %q, want the timestamp %q", got, lease.Token)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("second TryLock: err = %v, want ErrNotAcquired", err)
	}
	if err := a.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
}

// TestGetSetLock_SkewedClock: a client whose clock runs ahead judges a
// valid lock expired and takes it over; the first holder, still inside its
// own deadline, then deletes the new holder's lock with its bare DEL.
func TestGetSetLock_SkewedClock(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewGetSetLock(rdb[0], "lock", &lockcore.LegacyOptions{TTL: 5 * time.Second})
	b := lockcore.NewGetSetLock(rdb[0], "lock", &lockcore.LegacyOptions{
		TTL:   5 * time.Second,
		Clock: lockcore.SkewedClock{Base: lockcore.SystemClock{}, Offset: 10 * time.Second},
	})
	la, err := a.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.TryLock(ctx)
	if err != nil {
		t.Fatalf("skewed client's TryLock: %v, want a takeover", err)
	}
	if now := time.Now(); !la.ValidUntil().After(now) {
		t.Fatalf("a's lease already expired at the takeover; the test proves nothing")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a.Unlock: %v", err)
	}
	if n := rdb[0].Exists(ctx, "lock").Val(); n != 0 {
		t.Errorf("key still there: want a's DEL to have removed b's lock (%s)", lb.Token)
	}
}

// TestGetSetLock_Recovery: two slow contenders read the same expired
// timestamp 20ms apart. GETSET lets exactly one win, and the loser's
// GETSET moved the winner's expiry (seed 002); DEL then SETNX lets both win.
func TestGetSetLock_Recovery(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	for _, naive := range []bool{false, true} {
		expired := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
		if err := rdb[0].Set(ctx, "lock", expired, 0).Err(); err != nil {
			t.Fatal(err)
		}
		opt := &lockcore.LegacyOptions{TTL: 5 * time.Second, RecoveryPause: 100 * time.Millisecond, NaiveRecovery: naive}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 20 * time.Millisecond)
				_, errs[i] = lockcore.NewGetSetLock(rdb[0], "lock", opt).TryLock(ctx)
			})
		}
		wg.Wait()
		switch {
		case naive && (errs[0] != nil || errs[1] != nil):
			t.Errorf("naive recovery: errs = %v, want both granted", errs)
		case !naive && (errs[0] != nil || !errors.Is(errs[1], lockcore.ErrNotAcquired)):
			t.Errorf("GETSET recovery: errs = %v, want the first granted and the second refused", errs)
		case !naive && !strings.Contains(errs[1].Error(), "moved its expiry by +"):
			t.Errorf("the loser's error %q does not say how far it moved the expiry", errs[1])
		}
	}
}

// TestGetSetLock_CheckBeforeDel: with CheckBeforeDel a holder whose own
// clock says its lock expired sends no DEL (seed 002's advice), but the
// check and the DEL are two steps: a holder that still believes its lock
// valid (here a contender's clock runs ahead and takes it over) deletes
// the new holder's lock after a check that passed.
func TestGetSetLock_CheckBeforeDel(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()

	late := lockcore.NewGetSetLock(rdb[0], "lock", &lockcore.LegacyOptions{TTL: 500 * time.Millisecond, CheckBeforeDel: true,
		Clock: &steppingClock{now: time.Now(), Step: time.Second}}) // each reading a second later: expired at Unlock
	if _, err := late.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := late.Unlock(ctx); !errors.Is(err, lockcore.ErrExpired) {
		t.Fatalf("Unlock of an expired lock: err = %v, want ErrExpired", err)
	}
	if n := rdb[0].Exists(ctx, "lock").Val(); n != 1 {
		t.Fatal("the expired holder's Unlock deleted the key: want no DEL")
	}
	rdb[0].Del(ctx, "lock")

	a := lockcore.NewGetSetLock(rdb[0], "lock", &lockcore.LegacyOptions{TTL: 5 * time.Second, CheckBeforeDel: true,
		DelPause: 10 * time.Millisecond})
	b := lockcore.NewGetSetLock(rdb[0], "lock", &lockcore.LegacyOptions{TTL: 5 * time.Second,
		Clock: lockcore.SkewedClock{Base: lockcore.SystemClock{}, Offset: 10 * time.Second}})
	if _, err := a.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); err != nil {
		t.Fatalf("skewed client's TryLock: %v, want a takeover", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a.Unlock, its check passed: %v", err)
	}
	if n := rdb[0].Exists(ctx, "lock").Val(); n != 0 {
		t.Error("key still there: want a's DEL, after its check passed, to have removed b's lock")
	}
}
