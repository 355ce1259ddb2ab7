package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// serverTime returns the node's TIME.
func serverTime(tb testing.TB, rdb *redis.Client) time.Time {
	tb.Helper()
	tm, err := rdb.Time(context.Background()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return tm
}

func TestClockJumpFault_ExpiresLeaseEarly(t *testing.T) {
	t.Parallel()
	c := startClockCluster(t, cluster.Topology{})
	rdb := checkClockJump(t, c.Nodes[0])
	// A node that keeps running after the jump stays healthy.
	if err := rdb.Set(context.Background(), "after", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
}

// checkClockJump sets a key with a 10s TTL on n, jumps n's clock by twice
// that, and checks that TIME moved by the jump (+1s) and the key expired,
// then heals and checks the clock is back within 1s. It returns the client.
func checkClockJump(t *testing.T, n *cluster.Node) *redis.Client {
	t.Helper()
	ctx := context.Background()
	rdb := testcluster.Client(t, n.Addr())
	const ttl = 10 * time.Second
	if err := rdb.Set(ctx, "lease", "token", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	before := serverTime(t, rdb)
	f := &faults.ClockJumpFault{Offset: 2 * ttl}
	testcluster.Inject(t, f, n)
	moved := serverTime(t, rdb).Sub(before)
	if moved < 2*ttl || moved > 2*ttl+time.Second {
		t.Fatalf("TIME moved %v across a %v jump, want %v (+1s)", moved, f.Offset, f.Offset)
	}
	if err := rdb.Get(ctx, "lease").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET lease after the jump: err=%v, want redis.Nil (expired)", err)
	}
	testcluster.Heal(t, f, n)
	if off := serverTime(t, rdb).Sub(time.Now()); off.Abs() > time.Second {
		t.Fatalf("node clock off by %v after heal, want within 1s", off)
	}
	return rdb
}

func TestClockJumpFault_BackwardJumpOutlivesTTL(t *testing.T) {
	t.Parallel()
	c := startClockCluster(t, cluster.Topology{})
	ctx := context.Background()
	n := c.Nodes[0]
	rdb := testcluster.Client(t, n.Addr())
	f := &faults.ClockJumpFault{Offset: -30 * time.Second}
	testcluster.Inject(t, f, n)
	if off := serverTime(t, rdb).Sub(time.Now()); off > -29*time.Second || off < -31*time.Second {
		t.Fatalf("node clock off by %v, want -30s ±1s", off)
	}
	// The key's deadline is 10s after the skewed clock's now, 20s before
	// true time: when the clock comes back, the key is long expired.
	if err := rdb.Set(ctx, "lease", "token", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	testcluster.Heal(t, f, n)
	if err := rdb.Get(ctx, "lease").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET lease after the clock came back: err=%v, want redis.Nil", err)
	}
}

func TestClockJumpFault_NeedsShim(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	err := (&faults.ClockJumpFault{Offset: time.Second}).Inject(context.Background(), c.Nodes[0])
	if !errors.Is(err, cluster.ErrNoClock) {
		t.Fatalf("err = %v, want ErrNoClock", err)
	}
}
