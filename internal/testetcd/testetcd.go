// Package testetcd starts real etcd members for tests: a test that needs
// etcd calls [Start] and gets a running cluster, stopped at cleanup.
// Without the etcd binary the test is skipped with the reason, or fails
// when LOCKPICK_REQUIRE_REDIS=1 (CI), as [testredis.Require] does.
package testetcd

import (
	"fmt"
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
	return testredis.StartTimed(tb, cluster.Topology{Etcd: members}, false, 30*time.Second,
		fmt.Sprintf("%d etcd members, healthy,", members))
}

// Require skips tb when etcd (or redis-server, which the process backend
// needs) is not on PATH, or fails it when LOCKPICK_REQUIRE_REDIS=1.
func Require(tb testing.TB) {
	tb.Helper()
	testredis.Require(tb, true)
	_, err := exec.LookPath("etcd")
	testredis.RequireInstalled(tb, "etcd", err == nil)
}
