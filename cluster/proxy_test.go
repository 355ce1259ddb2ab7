package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestCluster_AddProxy(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	svc, err := c.AddProxy("resource", testcluster.EchoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddProxy("n1", "127.0.0.1:1"); err == nil {
		t.Fatal("AddProxy reused a node's name")
	}
	if err := testcluster.Echo(svc.Addr(), time.Second); err != nil {
		t.Fatal(err)
	}
	f := &faults.LatencyFault{Latency: 200 * time.Millisecond, Direction: faults.ToNode}
	ctx := context.Background()
	if err := faults.Inject(ctx, c, f, "resource"); err != nil {
		t.Fatal(err)
	}
	// The fastest of three round trips: a busy machine only adds to each.
	took := time.Hour
	for range 3 {
		start := time.Now()
		if err := testcluster.Echo(svc.Addr(), 2*time.Second); err != nil {
			t.Fatal(err)
		}
		took = min(took, time.Since(start))
	}
	if took < 200*time.Millisecond || took >= 400*time.Millisecond {
		t.Fatalf("echo took %v with 200ms latency one way, want 200ms (400ms: added twice)", took)
	}
	if err := faults.Heal(ctx, c, f, "resource"); err != nil {
		t.Fatal(err)
	}
	p := &faults.PartitionFault{}
	if err := faults.Inject(ctx, c, p, "resource"); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.Echo(svc.Addr(), 300*time.Millisecond); !testcluster.IsTimeout(err) {
		t.Fatalf("echo across a partition: err=%v, want a timeout", err)
	}
	if err := faults.Heal(ctx, c, p, "resource"); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.Echo(svc.Addr(), time.Second); err != nil {
		t.Fatalf("echo after heal: %v", err)
	}
	if err := faults.Inject(ctx, c, &faults.PauseFault{}, "resource"); !errors.Is(err, cluster.ErrNoProcess) {
		t.Fatalf("pause a service: err=%v, want ErrNoProcess", err)
	}
	if err := faults.Inject(ctx, c, p, "nope"); !errors.Is(err, cluster.ErrNoSuchNode) {
		t.Fatalf("inject on an unknown node: err=%v, want ErrNoSuchNode", err)
	}
}
