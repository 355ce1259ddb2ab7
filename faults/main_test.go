package faults_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testredis"
)

// clockShim is the clock shim library built once for the suite, or "" when
// gcc is missing (clock tests then skip).
var clockShim string

// helperEnv set to "ticker" makes the test binary a process that prints
// its wall clock in Unix nanoseconds every 10ms, forever, for the pause
// tests to freeze.
const helperEnv = "LOCKPICK_FAULTS_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "ticker" {
		for {
			fmt.Println(time.Now().UnixNano())
			time.Sleep(10 * time.Millisecond)
		}
	}
	var err error
	clockShim, err = cluster.BuildClockShim(filepath.Join(os.TempDir(), "lockpick-clockshim"))
	if err != nil {
		fmt.Println("clock tests will skip:", err)
	}
	os.Exit(m.Run())
}

// startCluster starts topo in a test-owned directory and stops it at cleanup.
func startCluster(tb testing.TB, topo cluster.Topology) *cluster.Cluster {
	tb.Helper()
	return startOn(tb, newBackend(tb), topo)
}

// startClockCluster is startCluster with the clock shim preloaded.
func startClockCluster(tb testing.TB, topo cluster.Topology) *cluster.Cluster {
	tb.Helper()
	if clockShim == "" {
		tb.Skip("no clock shim (gcc missing)")
	}
	b := newBackend(tb)
	b.ClockShim = clockShim
	return startOn(tb, b, topo)
}

func newBackend(tb testing.TB) *cluster.ProcessBackend {
	tb.Helper()
	testredis.Require(tb, true)
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func startOn(tb testing.TB, b cluster.Backend, topo cluster.Topology) *cluster.Cluster {
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

// client returns a client of addr that never retries and gives up on a
// reply after readTimeout (default 1s).
func client(tb testing.TB, addr string, readTimeout ...time.Duration) *redis.Client {
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

// node returns the node named name or fails the test.
func node(tb testing.TB, c *cluster.Cluster, name string) *cluster.Node {
	tb.Helper()
	n, err := c.Node(name)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func inject(tb testing.TB, f faults.Fault, n *cluster.Node) {
	tb.Helper()
	if err := f.Inject(context.Background(), n); err != nil {
		tb.Fatalf("inject %s: %v", faults.Describe(f, n), err)
	}
}

func heal(tb testing.TB, f faults.Fault, n *cluster.Node) {
	tb.Helper()
	if err := f.Heal(context.Background(), n); err != nil {
		tb.Fatalf("heal %s: %v", faults.Describe(f, n), err)
	}
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// eventually polls fn for up to 5s.
func eventually(fn func() error) error {
	return eventuallyWithin(5*time.Second, fn)
}

// eventuallyWithin polls fn every 10ms until it succeeds or timeout passes,
// returning its last error.
func eventuallyWithin(timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
