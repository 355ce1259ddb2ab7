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

// TestClientPauseFault: writes wait while paused and run once healed;
// reads are served meanwhile; a bad mode is refused.
func TestClientPauseFault(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	n := c.Nodes[0]
	ctx := context.Background()
	f := &faults.ClientPauseFault{}
	testcluster.Inject(t, f, n)
	got, err := f.Verify(ctx, n)
	if err != nil || !strings.Contains(got, "writes paused") {
		t.Fatalf("Verify = %q, %v; want writes paused", got, err)
	}
	rdb := testcluster.Client(t, n.Addr())
	if err := rdb.Get(ctx, "nothing").Err(); err != nil && err.Error() != "redis: nil" {
		t.Errorf("a read during a write pause: %v, want it served", err)
	}
	testcluster.Heal(t, f, n)
	// The probe SET Verify sent waited in the queue, and its client closed
	// the connection when the read timed out: Redis dropped the command.
	if v, err := rdb.Get(ctx, "lockpick:pause-probe").Result(); err == nil {
		t.Errorf("probe key after heal = %q; want the queued SET dropped with its connection", v)
	}
	if err := rdb.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Errorf("a write after heal: %v", err)
	}
	for _, mode := range []string{"reads", "all"} {
		if err := (&faults.ClientPauseFault{Mode: mode}).Inject(ctx, n); !errors.Is(err, cluster.ErrBadFault) {
			t.Errorf("mode %s: %v, want ErrBadFault", mode, err)
		}
	}
}
