package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestResetFault_ClosesAndRefusesConnections(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	ctx := context.Background()
	n := c.Nodes[0]
	rdb := testcluster.Client(t, n.Addr(), 2*time.Second)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f := &faults.ResetFault{}
	testcluster.Inject(t, f, n)
	// The pooled connection was closed; a fresh one is reset on its first request.
	for i := range 2 {
		start := time.Now()
		err := rdb.Ping(ctx).Err()
		if err == nil || testcluster.IsTimeout(err) {
			t.Fatalf("PING %d during reset: err=%v, want a connection error", i, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("PING %d failed after %v, want at once", i, took)
		}
	}
	testcluster.Heal(t, f, n)
	if err := testcluster.Eventually(func() error { return rdb.Ping(ctx).Err() }); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
}
