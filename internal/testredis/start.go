package testredis

import (
	"context"
	"testing"

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
