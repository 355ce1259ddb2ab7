package netlink_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// TestReservePort_LeavesNoFiles checks that released reservations remove
// their lock files (a machine running trials for days must not fill its
// temp folder) and that concurrent reservers never share a port.
func TestReservePort_LeavesNoFiles(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const n, rounds = 8, 50
	var mu sync.Mutex
	held := map[int]bool{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for range rounds {
				port, release, err := netlink.ReservePortForTest()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if held[port] {
					t.Errorf("port %d reserved twice at once", port)
				}
				held[port] = true
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold it while the others reserve
				mu.Lock()
				delete(held, port)
				mu.Unlock()
				release()
				release() // idempotent
			}
		})
	}
	wg.Wait()
	left, err := os.ReadDir(filepath.Join(os.TempDir(), "lockpick-ports"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		names := make([]string, 0, len(left))
		for _, e := range left[:min(5, len(left))] {
			names = append(names, e.Name())
		}
		t.Errorf("%d lock files left after every reservation was released, e.g. %v", len(left), names)
	}
}
