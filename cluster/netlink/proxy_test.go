package netlink_test

import (
	"sync"
	"testing"

	"github.com/lockpick/lockpick/cluster/netlink"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// TestLink_UpstreamWhileRetargeted reads a link's upstream while another
// goroutine retargets it; run with -race.
func TestLink_UpstreamWhileRetargeted(t *testing.T) {
	t.Parallel()
	p := netlink.NewProxies()
	t.Cleanup(p.Close)
	a, b := testcluster.EchoServer(t), testcluster.EchoServer(t)
	l, err := p.Add("retarget", a)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 20 {
			if err := l.SetUpstream([]string{a, b}[i%2]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 200 {
		if got := l.Upstream(); got != a && got != b {
			t.Fatalf("Upstream = %q, want %s or %s", got, a, b)
		}
	}
	wg.Wait()
	if got := l.Upstream(); got != b {
		t.Fatalf("Upstream = %q after retargeting, want %s", got, b)
	}
}
