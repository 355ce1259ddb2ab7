package testcluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/dockerbackend"
	"github.com/lockpick/lockpick/internal/testredis"
)

// The docker tests run when a Docker engine answers and skip, saying why
// (once on stdout, and in each test's skip message), when none does.
var dockerCheck = sync.OnceValue(func() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := dockerbackend.Available(ctx)
	if err != nil {
		fmt.Println("skipping docker tests:", err)
	}
	return err
})

// RequireDockerEnv, when set, turns the docker tests' skip into a failure, for CI machines with an engine.
const RequireDockerEnv = "LOCKPICK_REQUIRE_DOCKER"

// NeedDocker skips the test when no Docker engine answers.
func NeedDocker(tb testing.TB) {
	tb.Helper()
	if err := dockerCheck(); err != nil {
		if os.Getenv(RequireDockerEnv) != "" {
			tb.Fatalf("%s is set but %v", RequireDockerEnv, err)
		}
		tb.Skipf("skipping: %v", err)
	}
}

// NewDockerBackend returns a docker backend on a test-owned directory, closed at cleanup; with shim, under the clock shim.
func NewDockerBackend(tb testing.TB, shim bool) *dockerbackend.Backend {
	tb.Helper()
	NeedDocker(tb)
	testredis.Require(tb, true) // the image is built from the host's redis
	b, err := dockerbackend.New(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	if shim {
		path, err := ClockShim()
		if err != nil {
			tb.Skip("no clock shim (gcc missing)")
		}
		b.ClockShim = path
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// StartDocker starts topo on a fresh docker backend within 60s and closes the cluster at cleanup.
func StartDocker(tb testing.TB, topo cluster.Topology, shim bool) (*cluster.Cluster, *dockerbackend.Backend) {
	tb.Helper()
	b := NewDockerBackend(tb, shim)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, topo)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, b
}
