package etcdlock_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain runs every test, then checks that no etcdlock goroutine (a
// validity tracker) outlived its grant. Tests that need etcd skip without
// it (internal/testetcd).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaks := leakedGoroutines(5 * time.Second); leaks != "" {
			fmt.Println("etcdlock goroutines still running after the tests:\n" + leaks)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines waits up to timeout for every goroutine running
// etcdlock code to exit, and returns the stacks of those that did not.
func leakedGoroutines(timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaks []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "github.com/lockpick/lockpick/etcdlock.") && !strings.Contains(g, "etcdlock_test.") {
				leaks = append(leaks, g)
			}
		}
		if len(leaks) == 0 || time.Now().After(deadline) {
			return strings.Join(leaks, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
