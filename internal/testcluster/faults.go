package testcluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/lazyfs"
)

// CheckDownForDelay probes rdb after a restart delayed by delay began at start, checks the outage (early, late: tolerances) and returns when the node answered.
func CheckDownForDelay(t *testing.T, rdb *redis.Client, start time.Time, delay, probeFor, early, late time.Duration, wait func() error) time.Duration {
	t.Helper()
	var lastDown time.Duration
	err := EventuallyWithin(probeFor, func() error {
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

// ServerTime returns the node's TIME or fails the test.
func ServerTime(tb testing.TB, rdb *redis.Client) time.Time {
	tb.Helper()
	tm, err := rdb.Time(context.Background()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return tm
}

// CheckClockJump jumps n's clock by 20s, checks TIME moved and a 10s key expired, heals, checks the clock is back, and returns the client.
func CheckClockJump(t *testing.T, n *cluster.Node) *redis.Client {
	t.Helper()
	ctx := context.Background()
	rdb := Client(t, n.Addr())
	const ttl = 10 * time.Second
	if err := rdb.Set(ctx, "lease", "token", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	before := ServerTime(t, rdb)
	f := &faults.ClockJumpFault{Offset: 2 * ttl}
	Inject(t, f, n)
	moved := ServerTime(t, rdb).Sub(before)
	if moved < 2*ttl || moved > 2*ttl+time.Second {
		t.Fatalf("TIME moved %v across a %v jump, want %v (+1s)", moved, f.Offset, f.Offset)
	}
	if err := rdb.Get(ctx, "lease").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET lease after the jump: err=%v, want redis.Nil (expired)", err)
	}
	Heal(t, f, n)
	if off := ServerTime(t, rdb).Sub(time.Now()); off.Abs() > time.Second {
		t.Fatalf("node clock off by %v after heal, want within 1s", off)
	}
	return rdb
}

// RequireLazyDisks skips tb when this host cannot mount a lazy disk (no
// FUSE), or fails it when LOCKPICK_REQUIRE_REDIS=1.
func RequireLazyDisks(tb testing.TB) {
	tb.Helper()
	err := lazyfs.Available()
	switch {
	case err == nil:
	case os.Getenv(testredis.RequireEnv) == "1":
		tb.Fatalf("power loss needs lazy disks: %v, and %s=1", err, testredis.RequireEnv)
	default:
		tb.Skipf("power loss needs lazy disks: %v (%s=1 makes this a failure)", err, testredis.RequireEnv)
	}
}

// PowerLossTopology has one node per case of CheckPowerLoss.
var PowerLossTopology = cluster.Topology{Masters: 4, NodePersistence: map[string]cluster.Persistence{
	"n1": cluster.PersistAOFEverySec,
	"n2": cluster.PersistAOFAlways,
	"n3": cluster.PersistAOFEverySec,
	"n4": cluster.PersistNone,
}}

// CheckPowerLoss runs the power-loss cases (everysec, always, restart, no persistence) on c, a PowerLossTopology cluster on lazy disks.
func CheckPowerLoss(t *testing.T, c *cluster.Cluster) {
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
			n := Node(t, c, tc.node)
			rdb := Client(t, n.Addr())
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
			Inject(t, tc.fault, n)
			got := ""
			if v, ok := tc.fault.(faults.Verifier); ok {
				var err error
				if got, err = v.Verify(ctx, n); err != nil {
					t.Fatal(err)
				}
				lost := strings.Contains(got, "unsynced bytes of appendonlydir/")
				if tc.lostBytes && !lost {
					// The precondition, read from the disk: the kill came
					// before everysec's next fsync (a slow kill, as a
					// container's, may not).
					t.Skipf("the next second's fsync ran before the power loss (%s): nothing to lose", got)
				}
				if lost != tc.lostBytes {
					t.Errorf("Verify = %q, want lost bytes reported: %v", got, tc.lostBytes)
				}
			}
			for key, want := range map[string]bool{"first": tc.keepFirst, "second": tc.keepSecond} {
				_, err := rdb.Get(ctx, key).Result()
				if got := !errors.Is(err, redis.Nil); got != want {
					t.Errorf("%s after %s: key %q kept = %v (%v), want %v", tc.node, faults.Describe(tc.fault, n), key, got, err, want)
				}
			}
		})
	}
}

// VerifyOK checks that Verify sees f's effect on n (and returns: a check that hangs
// fails), described with every one of want, and returns the description.
func VerifyOK(tb testing.TB, f faults.Fault, n *cluster.Node, want ...string) string {
	tb.Helper()
	// A check that never ends is a bug; one that is slow on a loaded
	// machine is not: the bound is far beyond either.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := faults.Verify(ctx, f, n)
	if err != nil {
		tb.Fatalf("Verify %s (after %v): %v", faults.Describe(f, n), time.Since(start).Round(time.Millisecond), err)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			tb.Fatalf("Verify %s = %q, want it to say %q", faults.Describe(f, n), got, w)
		}
	}
	tb.Logf("Verify %s: %s (%v)", faults.Describe(f, n), got, time.Since(start).Round(time.Millisecond))
	return got
}
