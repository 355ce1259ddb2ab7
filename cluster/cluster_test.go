package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
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

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
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

func TestStart_ReplicaReplicatesThroughProxy(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Topology{Replicas: 1})
	ctx := context.Background()
	master, replica := client(t, c.Nodes[0].Addr()), client(t, c.Nodes[1].Addr())
	if err := master.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := eventually(func() error { return replica.Get(ctx, "k").Err() }); err != nil {
		t.Fatalf("replica never got the key: %v", err)
	}
	if got, want := c.Nodes[1].Repl.Upstream(), c.Nodes[0].Proc.Addr(); got != want {
		t.Fatalf("replication proxy forwards to %s, want the master %s", got, want)
	}
}

func TestStart_BadConfigReportsLog(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	_, err := cluster.Start(context.Background(), b, cluster.Topology{Config: []string{"no-such-directive yes"}})
	var se *cluster.StartError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *StartError", err)
	}
	if se.LogPath == "" || se.Node != "n1" {
		t.Fatalf("StartError = %+v, want node n1 with a log path", se)
	}
	if !strings.Contains(se.LogTail, "no-such-directive") {
		t.Fatalf("LogTail = %q, want redis's complaint about the directive", se.LogTail)
	}
}

func TestStart_BadPersistence(t *testing.T) {
	t.Parallel()
	_, err := cluster.Start(context.Background(), newBackend(t), cluster.Topology{Persistence: "rdb-sometimes"})
	if !errors.Is(err, cluster.ErrBadTopology) {
		t.Fatalf("err = %v, want ErrBadTopology", err)
	}
}

func TestStart_DistinctPortsAcrossClusters(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for i := range 3 {
		c := startCluster(t, cluster.Topology{Masters: 2, Replicas: 1, Sentinels: 1})
		for _, n := range append(append([]*cluster.Node{}, c.Nodes...), c.Sentinels...) {
			addrs := []string{n.Proc.Addr()}
			if n.Link != nil {
				addrs = append(addrs, n.Link.Addr())
			}
			if n.Repl != nil {
				addrs = append(addrs, n.Repl.Addr())
			}
			for _, a := range addrs {
				if prev, ok := seen[a]; ok {
					t.Fatalf("cluster %d %s listens on %s, already used by %s", i, n.Name, a, prev)
				}
				seen[a] = fmt.Sprintf("cluster %d %s", i, n.Name)
			}
		}
	}
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

func TestNewProcessBackend_RelativeDir(t *testing.T) {
	testredis.Require(t, true)
	t.Chdir(t.TempDir())
	b, err := cluster.NewProcessBackend("relative/nodes")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	p, err := b.Launch(context.Background(), cluster.ProcSpec{Name: "n1"})
	if err != nil {
		t.Fatalf("a node under a relative folder did not start: %v", err)
	}
	if !filepath.IsAbs(p.LogPath()) {
		t.Errorf("log path %q is relative", p.LogPath())
	}
}
