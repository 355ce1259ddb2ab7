package dockerbackend_test

// The suite's TestMain and the helper-process plumbing; the shared helpers
// are in internal/testcluster.

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// clockShim is the clock shim library built once for the suite, or "" when
// gcc is missing (clock tests then skip).
var clockShim string

func TestMain(m *testing.M) {
	var err error
	clockShim, err = testcluster.ClockShim()
	if err != nil {
		fmt.Println("clock tests will skip:", err)
	}
	os.Exit(m.Run())
}

// helperDirEnv names the directory a helper keeps its nodes' files in.
const helperDirEnv = "LOCKPICK_CLUSTER_TEST_HELPER_DIR"

// helperTopoEnv, set to "redis-cluster", makes the helper start a Redis
// Cluster of 3 primaries and 3 replicas instead of master, replica and
// sentinel; set to "etcd", 3 etcd members; set to "zookeeper", 3
// ZooKeeper members.
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
		switch os.Getenv(helperTopoEnv) {
		case "redis-cluster":
			topo = cluster.Topology{Shards: 3, Replicas: 1}
		case "etcd":
			topo = cluster.Topology{Etcd: 3}
		case "zookeeper":
			topo = cluster.Topology{ZooKeeper: 3}
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
