package lockcore_test

import (
	"context"
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
		fmt.Println("skipping lockcore tests: redis-server not installed (make deps)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startNodes starts n independent Redis masters and returns a client per node.
func startNodes(tb testing.TB, n int) (*cluster.Cluster, []*redis.Client) {
	tb.Helper()
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, cluster.Topology{Masters: n})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	clients := make([]*redis.Client, n)
	for i, node := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: node.Addr(), MaxRetries: -1})
		tb.Cleanup(func() { _ = clients[i].Close() })
	}
	return c, clients
}
