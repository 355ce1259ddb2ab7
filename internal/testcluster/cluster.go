package testcluster

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testredis"
)

// ClockShim builds the clock shim library once per test binary; "" and an error when gcc is missing.
var ClockShim = sync.OnceValues(func() (string, error) {
	return cluster.BuildClockShim(filepath.Join(os.TempDir(), "lockpick-clockshim"))
})

// StartCluster starts topo in a test-owned directory and stops it at cleanup.
func StartCluster(tb testing.TB, topo cluster.Topology) *cluster.Cluster {
	tb.Helper()
	return StartOn(tb, NewBackend(tb), topo)
}

// NewBackend returns a process backend on a test-owned directory, skipping without redis.
func NewBackend(tb testing.TB) *cluster.ProcessBackend {
	tb.Helper()
	testredis.Require(tb, true)
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// StartOn starts topo on b within 20s and closes both at cleanup.
func StartOn(tb testing.TB, b cluster.Backend, topo cluster.Topology) *cluster.Cluster {
	tb.Helper()
	testredis.Require(tb, topo.Sentinels > 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, topo)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	return c
}

// Client returns a client of addr that never retries and gives up on a reply after readTimeout (default 1s).
func Client(tb testing.TB, addr string, readTimeout ...time.Duration) *redis.Client {
	tb.Helper()
	rt := time.Second
	if len(readTimeout) > 0 {
		rt = readTimeout[0]
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: rt, WriteTimeout: rt, PoolSize: 1})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Node returns the node named name or fails the test.
func Node(tb testing.TB, c *cluster.Cluster, name string) *cluster.Node {
	tb.Helper()
	n, err := c.Node(name)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// Inject injects f into n or fails the test.
func Inject(tb testing.TB, f faults.Fault, n *cluster.Node) {
	tb.Helper()
	if err := f.Inject(context.Background(), n); err != nil {
		tb.Fatalf("inject %s: %v", faults.Describe(f, n), err)
	}
}

// Heal heals f on n or fails the test.
func Heal(tb testing.TB, f faults.Fault, n *cluster.Node) {
	tb.Helper()
	if err := f.Heal(context.Background(), n); err != nil {
		tb.Fatalf("heal %s: %v", faults.Describe(f, n), err)
	}
}

// IsTimeout reports whether err is a network timeout.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Eventually polls fn for up to 5s.
func Eventually(fn func() error) error {
	return EventuallyWithin(5*time.Second, fn)
}

// EventuallyWithin polls fn every 10ms until it succeeds or timeout passes, returning its last error.
func EventuallyWithin(timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
