package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// TestPowerLossFault_DropsUnsyncedWrites writes two keys in one wall-clock
// second: Redis's everysec policy fsyncs at the first write of a second, so
// the first key is durable and the second sits in the page cache until the
// next second. A power loss right after keeps the first and drops the
// second; a kill -9 keeps both; appendfsync always keeps both either way.
func TestPowerLossFault_DropsUnsyncedWrites(t *testing.T) {
	t.Parallel()
	testcluster.RequireLazyDisks(t)
	b := testcluster.NewBackend(t)
	b.LazyDisks = true
	testcluster.CheckPowerLoss(t, testcluster.StartOn(t, b, testcluster.PowerLossTopology))
}

func TestPowerLossFault_NeedsALazyDisk(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Persistence: cluster.PersistAOFEverySec})
	n := c.Nodes[0]
	rdb := testcluster.Client(t, n.Addr())
	if err := rdb.Set(context.Background(), "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	err := (&faults.PowerLossFault{}).Inject(context.Background(), n)
	if !errors.Is(err, cluster.ErrNoPowerLoss) {
		t.Fatalf("power loss on a plain disk: %v, want ErrNoPowerLoss", err)
	}
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the node must be left running: %v", err)
	}
}
