// Package testpg starts real PostgreSQL nodes for tests: a test that needs
// PostgreSQL calls [Start] and gets a running topology, stopped at cleanup.
// Without PostgreSQL's binaries the test is skipped with the reason, or
// fails when LOCKPICK_REQUIRE_REDIS=1 (CI), as [testredis.Require] does.
package testpg

import (
	"context"
	"os"
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
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	b.LazyDisks = lazy
	// A liveness bound, not a performance one: CI machines are busy.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	c, err := cluster.Start(ctx, b, cluster.Topology{Postgres: nodes})
	if err != nil {
		_ = b.Close()
		tb.Fatal(err)
	}
	tb.Logf("%d PostgreSQL node(s) started and answering in %v", nodes, time.Since(t0).Round(time.Millisecond))
	tb.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	return c
}

// Require skips tb when PostgreSQL's initdb (or redis-server, which the
// process backend needs) is missing, or fails it when
// LOCKPICK_REQUIRE_REDIS=1.
func Require(tb testing.TB) {
	tb.Helper()
	testredis.Require(tb, true)
	if !cluster.PostgresInstalled() {
		if os.Getenv(testredis.RequireEnv) == "1" {
			tb.Fatalf("PostgreSQL not installed, and %s=1 (make deps)", testredis.RequireEnv)
		}
		tb.Skipf("PostgreSQL not installed (make deps; %s=1 makes this a failure)", testredis.RequireEnv)
	}
}
