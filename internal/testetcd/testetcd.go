// Package testetcd starts real etcd members for tests: a test that needs
// etcd calls [Start] and gets a running cluster, stopped at cleanup.
// Without the etcd binary the test is skipped with the reason, or fails
// when LOCKPICK_REQUIRE_REDIS=1 (CI), as [testredis.Require] does.
package testetcd

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testredis"
)

// Start starts an etcd topology of members members in a test-owned
// directory, logs how long it took to be healthy, and stops it (and its
// backend) at cleanup. It fails the test if the start fails.
func Start(tb testing.TB, members int) *cluster.Cluster {
	tb.Helper()
	Require(tb)
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := cluster.Start(ctx, b, cluster.Topology{Etcd: members})
	if err != nil {
		_ = b.Close()
		tb.Fatal(err)
	}
	tb.Logf("%d etcd members started and healthy in %v", members, time.Since(t0).Round(time.Millisecond))
	tb.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	return c
}

// Require skips tb when etcd (or redis-server, which the process backend
// needs) is not on PATH, or fails it when LOCKPICK_REQUIRE_REDIS=1.
func Require(tb testing.TB) {
	tb.Helper()
	testredis.Require(tb, true)
	if _, err := exec.LookPath("etcd"); err != nil {
		if os.Getenv(testredis.RequireEnv) == "1" {
			tb.Fatalf("etcd not installed, and %s=1 (make deps)", testredis.RequireEnv)
		}
		tb.Skipf("etcd not installed (make deps; %s=1 makes this a failure)", testredis.RequireEnv)
	}
}
