// Package testzk starts real ZooKeeper ensembles for tests: a test that
// needs ZooKeeper calls [Start] and gets a running ensemble, stopped at
// cleanup. Without java and Debian's ZooKeeper jars the test is skipped
// with the reason, or fails when LOCKPICK_REQUIRE_REDIS=1 (CI), as
// [testredis.Require] does.
package testzk

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testredis"
)

// Start starts an ensemble of members members in a test-owned directory,
// on lazy disks if lazy, logs how long it took until every member served,
// and stops it (and its backend) at cleanup. It fails the test if the
// start fails.
func Start(tb testing.TB, members int, lazy bool) *cluster.Cluster {
	tb.Helper()
	Require(tb)
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	b.LazyDisks = lazy
	// A liveness bound, not a performance one: CI machines are busy.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	c, err := cluster.Start(ctx, b, cluster.Topology{ZooKeeper: members})
	if err != nil {
		_ = b.Close()
		tb.Fatal(err)
	}
	tb.Logf("%d ZooKeeper member(s) started and serving in %v", members, time.Since(t0).Round(time.Millisecond))
	tb.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	return c
}

// Require skips tb when java or Debian's ZooKeeper jars (or redis-server,
// which the process backend needs) are missing, or fails it when
// LOCKPICK_REQUIRE_REDIS=1.
func Require(tb testing.TB) {
	tb.Helper()
	testredis.Require(tb, true)
	if !cluster.ZooKeeperInstalled() {
		if os.Getenv(testredis.RequireEnv) == "1" {
			tb.Fatalf("ZooKeeper not installed, and %s=1 (make deps)", testredis.RequireEnv)
		}
		tb.Skipf("ZooKeeper not installed (make deps; %s=1 makes this a failure)", testredis.RequireEnv)
	}
}
