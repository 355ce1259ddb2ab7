package faults_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestCluster_SentinelFailover(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1, Sentinels: 3})
	ctx := context.Background()
	old := c.Nodes[0]
	if got, err := c.CurrentMaster(ctx); err != nil || got != old {
		t.Fatalf("CurrentMaster = %v, %v; want n1", got, err)
	}
	start := time.Now()
	testcluster.Inject(t, &faults.KillFault{}, old)
	promoted, err := c.WaitFailover(ctx, old, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := promoted.Name, "n2"; got != want {
		t.Fatalf("promoted %s, want %s", got, want)
	}
	t.Logf("failover after kill took %v", time.Since(start))
}

func TestSentinelFailoverFault_PromotesReplica(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1, Sentinels: 3})
	ctx := context.Background()
	// Named for the replica, it is no failover: nothing is asked, no effect.
	onReplica := &faults.SentinelFailoverFault{Timeout: 15 * time.Second}
	testcluster.Inject(t, onReplica, c.Nodes[1])
	if effect, err := faults.Verify(ctx, onReplica, c.Nodes[1]); !errors.Is(err, faults.ErrNoEffect) {
		t.Fatalf("failover named for replica n2: effect %q, %v; want ErrNoEffect", effect, err)
	}
	if got, err := c.CurrentMaster(ctx); err != nil || got != c.Nodes[0] {
		t.Fatalf("after a failover named for the replica, master is %v, %v; want n1 still", got, err)
	}
	start := time.Now()
	f := &faults.SentinelFailoverFault{Timeout: 15 * time.Second}
	testcluster.Inject(t, f, c.Nodes[0])
	got, err := c.CurrentMaster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "n2" || role(ctx, t, got) != "master" {
		t.Fatalf("master after SENTINEL FAILOVER is %s (role %s), want n2", got.Name, role(ctx, t, got))
	}
	if effect, err := faults.Verify(ctx, f, c.Nodes[0]); err != nil || !strings.Contains(effect, "n2 master") {
		t.Fatalf("Verify after the failover = %q, %v; want n2 named master", effect, err)
	}
	t.Logf("SENTINEL FAILOVER took %v", time.Since(start))
}
