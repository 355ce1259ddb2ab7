package lockcore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/lockcore"
)

func TestMutex_TryLock(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewMutex(rdb[0], "lock", &lockcore.Options{TTL: 5 * time.Second})
	b := lockcore.NewMutex(rdb[0], "lock", &lockcore.Options{TTL: 5 * time.Second})

	before := time.Now()
	lease, err := a.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := lease.ValidUntil().Sub(before); got > 5*time.Second || got < 4*time.Second {
		t.Errorf("validity = %v, want a little under the 5s TTL", got)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("second TryLock: err = %v, want ErrNotAcquired", err)
	}
	if got, err := rdb[0].Get(ctx, "lock").Result(); err != nil || got != lease.Token {
		t.Fatalf("key holds %q (%v), want the lease token %q", got, err, lease.Token)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Lost():
	default:
		t.Error("Lost() not closed after Unlock")
	}
	if err := a.Unlock(ctx); !errors.Is(err, lockcore.ErrReleased) {
		t.Errorf("second Unlock: err = %v, want ErrReleased", err)
	}
	if _, err := b.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
}

func TestMutex_UnlockDoesNotDeleteAnothersLock(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	a := lockcore.NewMutex(rdb[0], "lock", &lockcore.Options{TTL: 50 * time.Millisecond})
	b := lockcore.NewMutex(rdb[0], "lock", nil)
	if _, err := a.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	var lb *lockcore.Lease
	deadline := time.Now().Add(2 * time.Second)
	for lb == nil && time.Now().Before(deadline) {
		lb, _ = b.TryLock(ctx) // succeeds once a's key expires
		time.Sleep(5 * time.Millisecond)
	}
	if lb == nil {
		t.Fatal("b never acquired after a's TTL")
	}
	if err := a.Unlock(ctx); !errors.Is(err, lockcore.ErrNotHeld) {
		t.Fatalf("a.Unlock: err = %v, want ErrNotHeld", err)
	}
	if got, _ := rdb[0].Get(ctx, "lock").Result(); got != lb.Token {
		t.Fatalf("a's Unlock removed b's lock: key = %q", got)
	}
}

func TestMutex_ExtendAndFencing(t *testing.T) {
	_, rdb := startNodes(t, 1)
	ctx := context.Background()
	m := lockcore.NewMutex(rdb[0], "lock", &lockcore.Options{TTL: time.Second, Fencing: true})
	var fences []int64
	for range 3 {
		lease, err := m.TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fences = append(fences, lease.Fence)
		old := lease.ValidUntil()
		if err := m.Extend(ctx); err != nil {
			t.Fatal(err)
		}
		if !lease.ValidUntil().After(old) {
			t.Errorf("Extend did not move the deadline")
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if fences[0] < 1 || fences[1] != fences[0]+1 || fences[2] != fences[1]+1 {
		t.Fatalf("fences = %v, want strictly increasing by one", fences)
	}
}

func TestMutex_NodeDownIsDeterminateOpError(t *testing.T) {
	c, rdb := startNodes(t, 1)
	if err := c.Nodes[0].Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Link.Cut(); err != nil {
		t.Fatal(err)
	}
	_, err := lockcore.NewMutex(rdb[0], "lock", nil).TryLock(context.Background())
	var oe *lockcore.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v, want *OpError", err)
	}
	if oe.Indeterminate {
		t.Errorf("refused connection marked indeterminate: %v", err)
	}
}

// startReplicated starts a master (node 0) with one replica (node 1) and
// returns a client for the master.
func startReplicated(tb testing.TB) (*cluster.Cluster, *redis.Client) {
	tb.Helper()
	b := processBackend(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, cluster.Topology{Replicas: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	rdb := redis.NewClient(&redis.Options{MaintNotificationsConfig: lockcore.NoMaintNotifications(), Addr: c.Nodes[0].Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = rdb.Close() })
	return c, rdb
}

func TestMutex_WaitReplicas(t *testing.T) {
	c, rdb := startReplicated(t)
	ctx := context.Background()
	for _, fencing := range []bool{false, true} {
		m := lockcore.NewMutex(rdb, "lock", &lockcore.Options{
			TTL: 5 * time.Second, WaitReplicas: 1, WaitTimeout: time.Second, Fencing: fencing,
		})
		lease, err := m.TryLock(ctx)
		if err != nil {
			t.Fatalf("fencing=%v: TryLock with a live replica: %v", fencing, err)
		}
		if fencing && lease.Fence < 1 {
			t.Errorf("fence = %d, want ≥ 1", lease.Fence)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.Nodes[1].Repl.Cut(); err != nil {
		t.Fatal(err)
	}
	m := lockcore.NewMutex(rdb, "lock", &lockcore.Options{
		TTL: 5 * time.Second, WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond,
	})
	if _, err := m.TryLock(ctx); !errors.Is(err, lockcore.ErrNotReplicated) {
		t.Fatalf("TryLock with the replication link cut: err = %v, want ErrNotReplicated", err)
	}
	if n := rdb.Exists(ctx, "lock").Val(); n != 0 {
		t.Error("the unreplicated lock was not released")
	}
	if m.Lease() != nil {
		t.Error("Lease() != nil after ErrNotReplicated")
	}
}
