// Package testzk starts real ZooKeeper ensembles for tests: a test that
// needs ZooKeeper calls [Start] and gets a running ensemble, stopped at
// cleanup. Without java and Debian's ZooKeeper jars the test is skipped
// with the reason, or fails when LOCKPICK_REQUIRE_REDIS=1 (CI), as
// [testredis.Require] does.
package testzk

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testredis"
)

// Start starts an ensemble of members members in a test-owned directory,
// on lazy disks if lazy, logs how long it took until every member served,
// and stops it (and its backend) at cleanup. It fails the test if the
// start fails. The 3-minute bound is a liveness bound for a busy machine.
func Start(tb testing.TB, members int, lazy bool) *cluster.Cluster {
	tb.Helper()
	Require(tb)
	return testredis.StartTimed(tb, cluster.Topology{ZooKeeper: members}, lazy, 3*time.Minute,
		fmt.Sprintf("%d ZooKeeper member(s), serving,", members))
}

// StartClocked is [Start] with the members' JVMs under the clock shim at
// shim, on plain disks; it skips tb when shim is "" (no gcc).
func StartClocked(tb testing.TB, members int, shim string) *cluster.Cluster {
	tb.Helper()
	Require(tb)
	if shim == "" {
		tb.Skip("no clock shim (gcc missing)")
	}
	return testredis.StartClocked(tb, cluster.Topology{ZooKeeper: members}, shim, 3*time.Minute,
		fmt.Sprintf("%d ZooKeeper member(s) under the clock shim, serving,", members))
}

// Require skips tb when java or Debian's ZooKeeper jars (or redis-server,
// which the process backend needs) are missing, or fails it when
// LOCKPICK_REQUIRE_REDIS=1.
func Require(tb testing.TB) {
	tb.Helper()
	testredis.Require(tb, true)
	testredis.RequireInstalled(tb, "ZooKeeper", cluster.ZooKeeperInstalled())
}
