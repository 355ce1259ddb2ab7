package lockcore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/lockcore"
)

func subscribers(rdb []*redis.Client) []lockcore.Subscriber {
	s := make([]lockcore.Subscriber, len(rdb))
	for i, r := range rdb {
		s[i] = r
	}
	return s
}

// hashHolders returns, per node, the fields of the reentrant lock's hash.
func hashHolders(tb testing.TB, rdb []*redis.Client, key string) [][]string {
	tb.Helper()
	out := make([][]string, len(rdb))
	for i, r := range rdb {
		m, err := r.HGetAll(context.Background(), key).Result()
		if err != nil {
			tb.Fatal(err)
		}
		for f := range m {
			out[i] = append(out[i], f)
		}
	}
	return out
}

// TestMultiLock follows RedissonRedLock's pass over 3 nodes: it asks every
// node, tolerates one refusal, and past that releases only what it got.
func TestMultiLock(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	opt := &lockcore.MultiLockOptions{LeaseTime: 2 * time.Second, NoWatchdog: true}
	other := func(node int) *lockcore.Reentrant {
		return lockcore.NewReentrant(rdb[node], "lock", &lockcore.ReentrantOptions{LeaseTime: time.Minute, NoWatchdog: true})
	}

	m := lockcore.NewMultiLock(subscribers(rdb), "lock", opt)
	before := time.Now()
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lease.Nodes, []int{0, 1, 2}) {
		t.Errorf("free nodes: Nodes = %v, want every node (a pass asks them all)", lease.Nodes)
	}
	// Each node's lease starts when its request is sent, between before and
	// after: a bound on the lock's own clock reads, not a wall-clock bound
	// a busy machine can cross (CI saw 2.0017 s against the 2 s of before).
	after := time.Now()
	if vu := lease.ValidUntil(); vu.After(after.Add(2*time.Second)) || vu.Before(before.Add(1900*time.Millisecond)) {
		t.Errorf("valid until +%v from before the acquire, which took %v; want within [1.9s, 2s] of a moment inside it", vu.Sub(before), after.Sub(before))
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, f := range hashHolders(t, rdb, "lock") {
		if len(f) != 0 {
			t.Errorf("node %d still holds %v after Unlock", i, f)
		}
	}

	// Node 1 is taken: one refusal is tolerated.
	o1 := other(1)
	if _, err := o1.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if lease, err = m.TryLock(ctx); err != nil || !slices.Equal(lease.Nodes, []int{0, 2}) {
		t.Fatalf("one node taken: lease %v, %v; want nodes [0 2]", lease, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Nodes 1 and 2 taken: node 0 granted, then two refusals: it releases
	// node 0 (only what it got) and fails.
	o2 := other(2)
	if _, err := o2.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = m.TryLock(ctx)
	if !errors.Is(err, lockcore.ErrNotAcquired) || !strings.Contains(err.Error(), "1 of 3 nodes granted") {
		t.Fatalf("two nodes taken: err = %v, want ErrNotAcquired with 1 of 3 granted", err)
	}
	if f := hashHolders(t, rdb, "lock")[0]; len(f) != 0 {
		t.Errorf("node 0 holds %v after the failed pass, want it released", f)
	}

	// RedissonMultiLock: every node is necessary.
	if err := o2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	all := lockcore.NewMultiLock(subscribers(rdb), "lock", &lockcore.MultiLockOptions{LeaseTime: 2 * time.Second, NoWatchdog: true, All: true})
	if _, err := all.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("All with node 1 taken: err = %v, want ErrNotAcquired", err)
	}
}

// TestMultiLock_Watchdog: the watchdog keeps a 600ms lease alive past it.
func TestMultiLock_Watchdog(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	var renewals int
	done := make(chan struct{}, 100)
	m := lockcore.NewMultiLock(subscribers(rdb), "lock", &lockcore.MultiLockOptions{LeaseTime: 600 * time.Millisecond,
		OnRenew: func(r lockcore.Renewal) {
			if r.Done && r.Err == nil {
				done <- struct{}{}
			}
		}})
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	renewals = len(done)
	if renewals < 3 || !time.Now().Before(lease.ValidUntil()) {
		t.Errorf("after 1.5s: %d renewals, deadline %v from now; want the lease renewed", renewals, time.Until(lease.ValidUntil()))
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMultiLock_RenewalsNeedAMajority: with one node's writes paused the
// watchdog still renews through the other two; with two paused the lease
// runs out and the holder is told through Lost().
func TestMultiLock_RenewalsNeedAMajority(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	m := lockcore.NewMultiLock(subscribers(rdb), "lock", &lockcore.MultiLockOptions{LeaseTime: 600 * time.Millisecond})
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb[0].Do(ctx, "client", "pause", 1000, "write").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(900 * time.Millisecond)
	if !time.Now().Before(lease.ValidUntil()) {
		t.Fatalf("one node paused: the lease ran out (%v ago); want it renewed by the other two", time.Since(lease.ValidUntil()))
	}
	for _, r := range rdb[1:] {
		if err := r.Do(ctx, "client", "pause", 1500, "write").Err(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-lease.Lost():
	case <-time.After(2 * time.Second):
		t.Fatal("two nodes paused: Lost() not closed within 2s")
	}
	if m.Lease() != nil {
		t.Error("the lease is still current after the watchdog gave it up")
	}
	time.Sleep(600 * time.Millisecond) // let the pauses end before cleanup
}
