package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testcluster"
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
	clockShim, err = testcluster.ClockShim()
	if err != nil {
		fmt.Println("clock tests will skip:", err)
	}
	os.Exit(m.Run())
}

func TestStart_ReplicaReplicatesThroughProxy(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
	ctx := context.Background()
	master, replica := testcluster.Client(t, c.Nodes[0].Addr()), testcluster.Client(t, c.Nodes[1].Addr())
	if err := master.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.Eventually(func() error { return replica.Get(ctx, "k").Err() }); err != nil {
		t.Fatalf("replica never got the key: %v", err)
	}
	if got, want := c.Nodes[1].Repl.Upstream(), c.Nodes[0].Proc.Addr(); got != want {
		t.Fatalf("replication proxy forwards to %s, want the master %s", got, want)
	}
}

func TestStart_BadConfigReportsLog(t *testing.T) {
	t.Parallel()
	b := testcluster.NewBackend(t)
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
	_, err := cluster.Start(context.Background(), testcluster.NewBackend(t), cluster.Topology{Persistence: "rdb-sometimes"})
	if !errors.Is(err, cluster.ErrBadTopology) {
		t.Fatalf("err = %v, want ErrBadTopology", err)
	}
}

func TestStart_DistinctPortsAcrossClusters(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for i := range 3 {
		c := testcluster.StartCluster(t, cluster.Topology{Masters: 2, Replicas: 1, Sentinels: 1})
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
