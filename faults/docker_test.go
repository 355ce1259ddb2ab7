package faults_test

// Copies of the docker backend tests' helpers, for the faults' tests on
// containers.

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
// (once on stdout, and in each test's skip message), when none does. The
// image is built once per test binary (and reused across binaries: it is
// tagged by content).

var dockerCheck = sync.OnceValue(func() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := dockerbackend.Available(ctx)
	if err != nil {
		fmt.Println("skipping docker tests:", err)
	}
	return err
})

// requireDockerEnv, when set, turns the docker tests' skip into a failure,
// for CI machines that are known to have an engine.
const requireDockerEnv = "LOCKPICK_REQUIRE_DOCKER"

// needDocker skips the test when no Docker engine answers.
func needDocker(tb testing.TB) {
	tb.Helper()
	if err := dockerCheck(); err != nil {
		if os.Getenv(requireDockerEnv) != "" {
			tb.Fatalf("%s is set but %v", requireDockerEnv, err)
		}
		tb.Skipf("skipping: %v", err)
	}
}

// newDockerBackend returns a docker backend on a test-owned directory,
// closed at cleanup. With shim, its nodes run under the clock shim.
func newDockerBackend(tb testing.TB, shim bool) *dockerbackend.Backend {
	tb.Helper()
	needDocker(tb)
	testredis.Require(tb, true) // the image is built from the host's redis
	b, err := dockerbackend.New(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	if shim {
		if clockShim == "" {
			tb.Skip("no clock shim (gcc missing)")
		}
		b.ClockShim = clockShim
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// startDocker starts topo on a fresh docker backend.
func startDocker(tb testing.TB, topo cluster.Topology, shim bool) (*cluster.Cluster, *dockerbackend.Backend) {
	tb.Helper()
	b := newDockerBackend(tb, shim)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, topo)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, b
}
