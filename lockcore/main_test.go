package lockcore_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/lockcore"
)

// TestMain runs every test, then checks that no lockcore goroutine leaked.
// Tests that need Redis skip without it (internal/testredis).
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{}) // timeouts on purpose make go-redis chatty
	code := m.Run()
	if code == 0 {
		if leaks := leakedGoroutines(5 * time.Second); leaks != "" {
			fmt.Println("lockcore goroutines still running after the tests:\n" + leaks)
			code = 1
		}
	}
	os.Exit(code)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// leakedGoroutines waits up to timeout for every goroutine running lockcore
// code (node workers idle out after 2s, watchdogs stop with their lease) to
// exit, and returns the stacks of those that did not.
func leakedGoroutines(timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaks []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "github.com/lockpick/lockpick/lockcore.") {
				leaks = append(leaks, g)
			}
		}
		if len(leaks) == 0 || time.Now().After(deadline) {
			return strings.Join(leaks, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processBackend returns a backend of local redis-server processes, or
// skips the test without redis-server and redis-sentinel (the process
// backend needs both).
func processBackend(tb testing.TB) cluster.Backend {
	tb.Helper()
	testredis.Require(tb, true)
	b, err := cluster.NewProcessBackend(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// startNodes starts n independent Redis masters and returns a client per node.
func startNodes(tb testing.TB, n int) (*cluster.Cluster, []*redis.Client) {
	tb.Helper()
	b := processBackend(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, cluster.Topology{Masters: n})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	clients := make([]*redis.Client, n)
	for i, node := range c.Nodes {
		// ContextTimeoutEnabled: a request past its context's deadline must
		// give up its connection at once, not after ReadTimeout.
		clients[i] = redis.NewClient(&redis.Options{MaintNotificationsConfig: lockcore.NoMaintNotifications(), Addr: node.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
		tb.Cleanup(func() { _ = clients[i].Close() })
	}
	return c, clients
}
