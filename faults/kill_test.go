package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestKillFault_DownUntilHealed(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Persistence: cluster.PersistAOFAlways})
	ctx := context.Background()
	n := c.Nodes[0]
	rdb := testcluster.Client(t, n.Addr(), 300*time.Millisecond)
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := &faults.KillFault{}
	testcluster.Inject(t, f, n)
	testcluster.Inject(t, f, n) // a second kill is harmless
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered by a killed node")
	}
	testcluster.Heal(t, f, n)
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET k after heal = %q, %v; want v (aof-always)", got, err)
	}
	testcluster.Heal(t, f, n) // healing a running node does nothing
}

func TestKillFault_ServiceHasNoProcess(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	svc, err := c.AddProxy("resource", c.Nodes[0].Proc.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := (&faults.KillFault{}).Inject(context.Background(), svc); err == nil {
		t.Fatal("killed a service without a process")
	}
}
