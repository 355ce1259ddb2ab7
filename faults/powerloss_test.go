package faults_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// fsyncShim builds the fsync shim, or skips the test without gcc.
func fsyncShim(tb testing.TB) string {
	tb.Helper()
	shim, err := cluster.BuildFsyncShim(filepath.Join(os.TempDir(), "lockpick-fsyncshim"))
	if err != nil {
		tb.Skipf("no fsync shim: %v", err)
	}
	return shim
}

// powerLossTopology has one node per case of checkPowerLoss.
var powerLossTopology = cluster.Topology{Masters: 4, NodePersistence: map[string]cluster.Persistence{
	"n1": cluster.PersistAOFEverySec,
	"n2": cluster.PersistAOFAlways,
	"n3": cluster.PersistAOFEverySec,
	"n4": cluster.PersistNone,
}}

// TestPowerLossFault_DropsUnsyncedWrites writes two keys in one wall-clock
// second: Redis's everysec policy fsyncs at the first write of a second, so
// the first key is durable and the second sits in the page cache until the
// next second. A power loss right after keeps the first and drops the
// second; a kill -9 keeps both; appendfsync always keeps both either way.
func TestPowerLossFault_DropsUnsyncedWrites(t *testing.T) {
	t.Parallel()
	b := testcluster.NewBackend(t)
	b.FsyncShim = fsyncShim(t)
	checkPowerLoss(t, testcluster.StartOn(t, b, powerLossTopology))
}

// checkPowerLoss runs the cases of TestPowerLossFault_DropsUnsyncedWrites
// on c, a cluster of powerLossTopology under the fsync shim.
func checkPowerLoss(t *testing.T, c *cluster.Cluster) {
	for _, tc := range []struct {
		node       string
		fault      faults.Fault
		keepFirst  bool
		keepSecond bool
		lostBytes  bool
	}{
		{"n1", &faults.PowerLossFault{}, true, false, true},
		{"n2", &faults.PowerLossFault{}, true, true, false},
		{"n3", &faults.RestartFault{}, true, true, false},
		{"n4", &faults.PowerLossFault{}, false, false, false},
	} {
		t.Run(tc.node, func(t *testing.T) {
			ctx := context.Background()
			n := testcluster.Node(t, c, tc.node)
			rdb := testcluster.Client(t, n.Addr())
			// 100 ms into the next second: everysec has not synced in it yet.
			now := time.Now()
			time.Sleep(now.Truncate(time.Second).Add(time.Second + 100*time.Millisecond).Sub(now))
			if err := rdb.Set(ctx, "first", "1", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the background fsync of "first"
			if err := rdb.Set(ctx, "second", "2", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			testcluster.Inject(t, tc.fault, n)
			if time.Now().Sub(now.Truncate(time.Second)) > 1900*time.Millisecond {
				t.Skip("the machine is too slow: the next second's fsync may have run before the power loss")
			}
			for key, want := range map[string]bool{"first": tc.keepFirst, "second": tc.keepSecond} {
				_, err := rdb.Get(ctx, key).Result()
				if got := !errors.Is(err, redis.Nil); got != want {
					t.Errorf("%s after %s: key %q kept = %v (%v), want %v", tc.node, faults.Describe(tc.fault, n), key, got, err, want)
				}
			}
			v, ok := tc.fault.(faults.Verifier)
			if !ok {
				return
			}
			got, err := v.Verify(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			if lost := strings.Contains(got, "unsynced bytes of appendonlydir/"); lost != tc.lostBytes {
				t.Errorf("Verify = %q, want lost bytes reported: %v", got, tc.lostBytes)
			}
		})
	}
}

func TestPowerLossFault_NeedsTheShim(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Persistence: cluster.PersistAOFEverySec})
	n := c.Nodes[0]
	rdb := testcluster.Client(t, n.Addr())
	if err := rdb.Set(context.Background(), "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	err := (&faults.PowerLossFault{}).Inject(context.Background(), n)
	if !errors.Is(err, cluster.ErrNoFsyncShim) {
		t.Fatalf("power loss without the shim: %v, want ErrNoFsyncShim", err)
	}
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the node must be left running: %v", err)
	}
}
