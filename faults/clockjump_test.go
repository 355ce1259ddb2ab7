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

func TestClockJumpFault_ExpiresLeaseEarly(t *testing.T) {
	t.Parallel()
	c := startClockCluster(t, cluster.Topology{})
	rdb := testcluster.CheckClockJump(t, c.Nodes[0])
	// A node that keeps running after the jump stays healthy.
	if err := rdb.Set(context.Background(), "after", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestClockJumpFault_BackwardJumpOutlivesTTL(t *testing.T) {
	t.Parallel()
	c := startClockCluster(t, cluster.Topology{})
	ctx := context.Background()
	n := c.Nodes[0]
	rdb := testcluster.Client(t, n.Addr())
	f := &faults.ClockJumpFault{Offset: -30 * time.Second}
	testcluster.Inject(t, f, n)
	if off := testcluster.ServerTime(t, rdb).Sub(time.Now()); off > -29*time.Second || off < -31*time.Second {
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
