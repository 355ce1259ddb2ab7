package cluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// TestPromoteFault_DemoteWhileFaultsRun looks up the old master's
// replication link while a promotion demotes it; run with -race.
func TestPromoteFault_DemoteWhileFaultsRun(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
	ctx := context.Background()
	n1, n2 := c.Nodes[0], c.Nodes[1]
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cut := &faults.CutReplicationFault{}
		for {
			select {
			case <-done:
				return
			default:
			}
			_ = n1.ReplLink()
			if _, err := cut.Verify(ctx, n1); !errors.Is(err, cluster.ErrNoLink) && !errors.Is(err, faults.ErrNoEffect) {
				t.Errorf("Verify cut replication on n1: err=%v, want ErrNoLink or ErrNoEffect", err)
				return
			}
		}
	}()
	testcluster.Inject(t, &faults.PromoteFault{Demote: true}, n2)
	close(done)
	wg.Wait()
	l := n1.ReplLink()
	if l == nil {
		t.Fatal("the demoted master has no replication link")
	}
	if got, want := l.Upstream(), n2.Proc.Addr(); got != want {
		t.Fatalf("n1 replicates from %s, want the new master %s", got, want)
	}
	if n1.Repl != nil {
		t.Fatalf("n1.Repl = %v, want nil: Repl never changes after Start", n1.Repl)
	}
	// Network faults on the demoted master find its new link.
	f := &faults.CutReplicationFault{}
	testcluster.Inject(t, f, n1)
	testcluster.VerifyOK(t, f, n1, "replication link cut")
	testcluster.Heal(t, f, n1)
}
