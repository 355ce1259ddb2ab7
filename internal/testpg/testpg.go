// Package testpg starts real PostgreSQL nodes for tests: a test that needs
// PostgreSQL calls [Start] and gets a running topology, stopped at cleanup.
// Without PostgreSQL's binaries the test is skipped with the reason, or
// fails when LOCKPICK_REQUIRE_REDIS=1 (CI), as [testredis.Require] does.
package testpg

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testredis"
)

// Start starts a PostgreSQL topology of nodes nodes (1: a primary; 2: and
// a replica) in a test-owned directory, on lazy disks if lazy, logs how
// long it took, and stops it (and its backend) at cleanup. It fails the
// test if the start fails.
func Start(tb testing.TB, nodes int, lazy bool) *cluster.Cluster {
	tb.Helper()
	Require(tb)
	// A liveness bound, not a performance one: CI machines are busy.
	return testredis.StartTimed(tb, cluster.Topology{Postgres: nodes}, lazy, 2*time.Minute,
		fmt.Sprintf("%d PostgreSQL node(s), answering,", nodes))
}

// StartClocked is [Start] with the servers under the clock shim at shim,
// on plain disks; it skips tb when shim is "" (no gcc).
func StartClocked(tb testing.TB, nodes int, shim string) *cluster.Cluster {
	tb.Helper()
	Require(tb)
	if shim == "" {
		tb.Skip("no clock shim (gcc missing)")
	}
	return testredis.StartClocked(tb, cluster.Topology{Postgres: nodes}, shim, 2*time.Minute,
		fmt.Sprintf("%d PostgreSQL node(s) under the clock shim, answering,", nodes))
}

// Require skips tb when PostgreSQL's initdb (or redis-server, which the
// process backend needs) is missing, or fails it when
// LOCKPICK_REQUIRE_REDIS=1.
func Require(tb testing.TB) {
	tb.Helper()
	testredis.Require(tb, true)
	testredis.RequireInstalled(tb, "PostgreSQL", cluster.PostgresInstalled())
}
