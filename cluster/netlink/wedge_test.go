package netlink_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/netlink"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// streamTo keeps writing a line a millisecond through addr until ctx
// ends, redialling whenever a fault closes the connection.
func streamTo(ctx context.Context, addr string) {
	for ctx.Err() == nil {
		conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		for ctx.Err() == nil {
			_ = conn.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := conn.Write([]byte("ping\n")); err != nil {
				break
			}
			time.Sleep(time.Millisecond) // steady traffic, without starving the tests beside it
		}
		_ = conn.Close()
	}
}

// within runs fn and fails the test if it takes longer than d.
func within(t *testing.T, d time.Duration, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return nil
	}
}

// TestLink_HealLatencyAfterPartition heals a partition and then a latency
// on the same link under traffic, the order that deadlocked toxiproxy
// (Shopify/toxiproxy#558) in the first or second round before heals
// waited for the connections a partition's removal closes.
func TestLink_HealLatencyAfterPartition(t *testing.T) {
	t.Parallel()
	p := netlink.NewProxies()
	t.Cleanup(p.Close)
	l, err := p.Add("svc", testcluster.EchoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	n := &cluster.Node{Name: "svc", Link: l}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 4 {
		go streamTo(ctx, l.Addr())
	}
	lat := &faults.LatencyFault{Latency: 5 * time.Millisecond, Direction: faults.ToNode}
	part := &faults.PartitionFault{Direction: faults.ToNode}
	for i := range 30 {
		for _, f := range []fault{lat, part} {
			if err := f.Inject(ctx, n); err != nil {
				t.Fatalf("round %d: inject %s: %v", i, f.Describe(), err)
			}
		}
		time.Sleep(10 * time.Millisecond)
		for _, f := range []fault{part, lat} {
			if err := within(t, 15*time.Second, "heal "+f.Describe(), func() error { return f.Heal(ctx, n) }); err != nil {
				t.Fatalf("round %d: heal %s: %v", i, f.Describe(), err)
			}
		}
	}
	if err := testcluster.Echo(l.Addr(), time.Second); err != nil {
		t.Fatalf("link does not forward after the heals: %v", err)
	}
}

// fault is a fault that describes itself.
type fault interface {
	faults.Fault
	Describe() string
}

// stuck holds the test toxic's pipe until the channel it points to is closed.
var stuck atomic.Pointer[chan struct{}]

// stuckToxic ignores interrupts until stuck is closed, as a toxiproxy toxic
// blocked sending to a dead writer does: any change to its link hangs.
type stuckToxic struct{}

func (stuckToxic) Pipe(stub *toxics.ToxicStub) {
	<-*stuck.Load()
	new(toxics.NoopToxic).Pipe(stub)
}

func init() { toxics.Register("lockpick-test-stuck", new(stuckToxic)) }

// TestLink_WedgedChangeIsBounded wedges a link on purpose: the change
// returns ErrWedged after the bound, later changes fail at once, the link
// recovers when the stuck change ends, and Close never hangs.
func TestLink_WedgedChangeIsBounded(t *testing.T) {
	p := netlink.NewProxies()
	const bound = time.Second
	p.SetChangeTimeout(bound)
	l, err := p.Add("svc", testcluster.EchoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wedge := func() {
		t.Helper()
		release := make(chan struct{})
		stuck.Store(&release)
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		// A connection for the toxic to sit on, proxied for sure: one line
		// made the round trip through it.
		conn, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := conn.Write([]byte("hello\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		if err := l.AddToxic(ctx, "stuck", "lockpick-test-stuck", "downstream", nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = within(t, 3*time.Second, "RemoveToxic", func() error { return l.RemoveToxic(ctx, "stuck") })
		if !errors.Is(err, netlink.ErrWedged) {
			t.Fatalf("RemoveToxic of a stuck toxic: err=%v, want ErrWedged", err)
		}
		if d := time.Since(start); d < bound {
			t.Fatalf("RemoveToxic gave up after %v, before the bound", d)
		}
	}
	wedge()
	start := time.Now()
	if err := l.AddToxic(ctx, "slow", "latency", "upstream", map[string]any{"latency": 1}); !errors.Is(err, netlink.ErrWedged) {
		t.Fatalf("AddToxic on a wedged link: err=%v, want ErrWedged", err)
	}
	if d := time.Since(start); d >= bound/2 { // waiting its turn would take the bound
		t.Fatalf("AddToxic on a wedged link took %v, want at once (not the %v bound)", d, bound)
	}
	close(*stuck.Load())
	deadline := time.Now().Add(3 * time.Second)
	for {
		t2, err := l.Toxic(ctx, "stuck")
		if err == nil && t2 == nil {
			break // the stuck removal finished and the link answers again
		}
		if time.Now().After(deadline) {
			t.Fatalf("link did not recover after the stuck toxic let go: toxic=%v err=%v", t2, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wedge()
	_ = within(t, 3*time.Second, "Close", func() error { p.Close(); return nil })
}
