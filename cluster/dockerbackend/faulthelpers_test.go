package dockerbackend_test

// Copies of faults' test helpers that the docker backend's tests use too.

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

// checkDownForDelay pings rdb until the node answers again (for at most
// probeFor) after a delayed restart that began at start, and checks that it
// answered no earlier than delay, that its last failed probe came within
// early of the delay's end, and that it was back within late after it. wait
// returns the fault's Inject error once Inject is done. It returns when the
// node answered, from start.
func checkDownForDelay(t *testing.T, rdb *redis.Client, start time.Time, delay, probeFor, early, late time.Duration, wait func() error) time.Duration {
	t.Helper()
	var lastDown time.Duration
	err := testcluster.EventuallyWithin(probeFor, func() error {
		err := rdb.Ping(context.Background()).Err()
		if err != nil {
			lastDown = time.Since(start)
		}
		return err
	})

	up := time.Since(start)
	if injectErr := wait(); injectErr != nil || err != nil {
		t.Fatalf("inject: %v; probe: %v", injectErr, err)
	}
	if up < delay {
		t.Fatalf("node answered %v after the kill, before the %v delay", up, delay)
	}
	if lastDown < delay-early {
		t.Fatalf("last failed probe at %v, want one near the end of the %v delay", lastDown, delay)
	}
	if up > delay+late {
		t.Fatalf("node came back %v after the kill, want within %v of the %v delay", up, late, delay)
	}
	return up
}

// serverTime returns the node's TIME.
func serverTime(tb testing.TB, rdb *redis.Client) time.Time {
	tb.Helper()
	tm, err := rdb.Time(context.Background()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return tm
}

// checkClockJump sets a key with a 10s TTL on n, jumps n's clock by twice
// that, and checks that TIME moved by the jump (+1s) and the key expired,
// then heals and checks the clock is back within 1s. It returns the client.
func checkClockJump(t *testing.T, n *cluster.Node) *redis.Client {
	t.Helper()
	ctx := context.Background()
	rdb := testcluster.Client(t, n.Addr())
	const ttl = 10 * time.Second
	if err := rdb.Set(ctx, "lease", "token", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	before := serverTime(t, rdb)
	f := &faults.ClockJumpFault{Offset: 2 * ttl}
	testcluster.Inject(t, f, n)
	moved := serverTime(t, rdb).Sub(before)
	if moved < 2*ttl || moved > 2*ttl+time.Second {
		t.Fatalf("TIME moved %v across a %v jump, want %v (+1s)", moved, f.Offset, f.Offset)
	}
	if err := rdb.Get(ctx, "lease").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET lease after the jump: err=%v, want redis.Nil (expired)", err)
	}
	testcluster.Heal(t, f, n)
	if off := serverTime(t, rdb).Sub(time.Now()); off.Abs() > time.Second {
		t.Fatalf("node clock off by %v after heal, want within 1s", off)
	}
	return rdb
}

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
