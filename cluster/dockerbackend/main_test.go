package dockerbackend_test

// Copies of package cluster's test helpers that the docker backend's tests
// use too.

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
)

// clockShim is the clock shim library built once for the suite, or "" when
// gcc is missing (clock tests then skip).
var clockShim string

func TestMain(m *testing.M) {
	var err error
	clockShim, err = cluster.BuildClockShim(filepath.Join(os.TempDir(), "lockpick-clockshim"))
	if err != nil {
		fmt.Println("clock tests will skip:", err)
	}
	os.Exit(m.Run())
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

// helperDirEnv names the directory a helper keeps its nodes' files in.
const helperDirEnv = "LOCKPICK_CLUSTER_TEST_HELPER_DIR"

// helperTopoEnv, set to "redis-cluster", makes the helper start a Redis
// Cluster of 3 primaries and 3 replicas instead of master, replica and
// sentinel.
const helperTopoEnv = "LOCKPICK_CLUSTER_TEST_HELPER_TOPO"

// helperNodes is how many processes the helper's topology runs.
func helperNodes(topo string) int {
	if topo == "redis-cluster" {
		return 6
	}
	return 3
}

// startHelperTopology starts a master, a replica and a sentinel on b (made
// with error err) for a helper process and prints "ready", or prints the
// error and returns 2.
func startHelperTopology(b cluster.Backend, err error, timeout time.Duration) int {
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		topo := cluster.Topology{Replicas: 1, Sentinels: 1}
		if os.Getenv(helperTopoEnv) == "redis-cluster" {
			topo = cluster.Topology{Shards: 3, Replicas: 1}
		}
		_, err = cluster.Start(ctx, b, topo)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	fmt.Println("ready")
	return 0
}
