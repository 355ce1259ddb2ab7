package testredis

import (
	"context"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// StartOne starts a one-node topology of real processes for the test and
// stops it at the test's end; it skips (or fails) tb as [Require] does when
// redis-server is missing, and fails tb if the node does not start.
func StartOne(tb testing.TB) *cluster.Cluster {
	tb.Helper()
	Require(tb, true)
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	c, err := cluster.Start(context.Background(), b, cluster.Topology{Masters: 1})
	if err != nil {
		_ = b.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	return c
}

// StartTimed starts topo on a process backend in a test-owned directory (on
// lazy disks if lazy) within timeout, logs how long it took, naming the
// topology as what, and stops it (and its backend) at cleanup. It fails the
// test if the start fails. The caller checks first that what topo needs is
// installed.
func StartTimed(tb testing.TB, topo cluster.Topology, lazy bool, timeout time.Duration, what string) *cluster.Cluster {
	tb.Helper()
	return startTimed(tb, topo, lazy, "", timeout, what)
}

// StartClocked is [StartTimed] with every process under the clock shim at
// shim ([cluster.ProcessBackend.ClockShim]), on plain disks.
func StartClocked(tb testing.TB, topo cluster.Topology, shim string, timeout time.Duration, what string) *cluster.Cluster {
	tb.Helper()
	return startTimed(tb, topo, false, shim, timeout, what)
}

func startTimed(tb testing.TB, topo cluster.Topology, lazy bool, shim string, timeout time.Duration, what string) *cluster.Cluster {
	tb.Helper()
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	b.LazyDisks, b.ClockShim = lazy, shim
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t0 := time.Now()
	c, err := cluster.Start(ctx, b, topo)
	if err != nil {
		_ = b.Close()
		tb.Fatal(err)
	}
	tb.Logf("%s started in %v", what, time.Since(t0).Round(time.Millisecond))
	tb.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	return c
}
