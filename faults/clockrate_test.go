package faults_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestClockRateFault_FastClockExpiresEarly(t *testing.T) {
	t.Parallel()
	c := startClockCluster(t, cluster.Topology{})
	ctx := context.Background()
	n := c.Nodes[0]
	rdb := testcluster.Client(t, n.Addr())
	f := &faults.ClockRateFault{Rate: 10}
	testcluster.Inject(t, f, n)
	t.Cleanup(func() { testcluster.Heal(t, f, n) })

	const ttl = 3 * time.Second
	start, nodeStart := time.Now(), testcluster.ServerTime(t, rdb)
	if err := rdb.Set(ctx, "lease", "token", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	err := testcluster.EventuallyWithin(ttl, func() error {
		if err := rdb.Get(ctx, "lease").Err(); !errors.Is(err, redis.Nil) {
			return fmt.Errorf("lease still there (err=%v)", err)
		}
		return nil
	})

	if err != nil {
		t.Fatalf("a %v lease on a 10× clock lived %v of true time: %v", ttl, time.Since(start), err)
	}
	trueElapsed, nodeElapsed := time.Since(start), testcluster.ServerTime(t, rdb).Sub(nodeStart)
	if trueElapsed > ttl/2 {
		t.Fatalf("lease expired after %v of true time, want well under %v", trueElapsed, ttl)
	}
	if rate := float64(nodeElapsed) / float64(trueElapsed); rate < 7 || rate > 11 {
		t.Fatalf("node clock advanced %v in %v of true time (×%.1f), want ×10 (7..11)", nodeElapsed, trueElapsed, rate)
	}
}

func TestClockRateFault_RejectsNonPositiveRate(t *testing.T) {
	t.Parallel()
	c := startClockCluster(t, cluster.Topology{})
	err := (&faults.ClockRateFault{Rate: 0}).Inject(context.Background(), c.Nodes[0])
	if !errors.Is(err, cluster.ErrBadFault) {
		t.Fatalf("err = %v, want ErrBadFault", err)
	}
}
