package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
)

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Println("skipping cluster tests: redis-server not installed (make deps)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startCluster starts topo in a test-owned directory and stops it at cleanup.
func startCluster(tb testing.TB, topo cluster.Topology) *cluster.Cluster {
	tb.Helper()
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, topo)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func client(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestStart_ReplicaReplicatesThroughProxy(t *testing.T) {
	c := startCluster(t, cluster.Topology{Replicas: 1})
	ctx := context.Background()
	master, replica := client(t, c.Nodes[0].Addr()), client(t, c.Nodes[1].Addr())
	if err := master.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := eventually(func() error { return replica.Get(ctx, "k").Err() }); err != nil {
		t.Fatalf("replica never got the key: %v", err)
	}

	c.Nodes[1].Repl.Cut()
	if err := master.Set(ctx, "k2", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // give replication a chance it must not take
	if err := replica.Get(ctx, "k2").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("replica got k2 through a cut link: err=%v", err)
	}
}

func TestCluster_SentinelFailover(t *testing.T) {
	c := startCluster(t, cluster.Topology{Replicas: 1, Sentinels: 3})
	ctx := context.Background()
	old := c.Nodes[0]
	if got, err := c.CurrentMaster(ctx); err != nil || got != old {
		t.Fatalf("CurrentMaster = %v, %v; want n1", got, err)
	}
	start := time.Now()
	if err := old.Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	promoted, err := c.WaitFailover(ctx, old, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := promoted.Name, "n2"; got != want {
		t.Fatalf("promoted %s, want %s", got, want)
	}
	t.Logf("failover took %v", time.Since(start))
}

func TestStart_BadConfigReportsLog(t *testing.T) {
	b, err := cluster.NewProcessBackend(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = cluster.Start(context.Background(), b, cluster.Topology{Config: []string{"no-such-directive yes"}})
	var se *cluster.StartError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *StartError", err)
	}
	if se.LogPath == "" || se.Node != "n1" {
		t.Fatalf("StartError = %+v, want node n1 with a log path", se)
	}
}

// eventually polls fn for up to 5s.
func eventually(fn func() error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
