package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// echoServer serves a line echo on loopback until the test ends.
func echoServer(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := conn.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// echo dials addr, sends one line and waits up to timeout for it back.
func echo(addr string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("hello\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "hello\n" {
		return errors.New("echo garbled: " + line)
	}
	return nil
}

func TestCluster_AddProxy(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	svc, err := c.AddProxy("resource", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddProxy("n1", "127.0.0.1:1"); err == nil {
		t.Fatal("AddProxy reused a node's name")
	}
	if err := echo(svc.Addr(), time.Second); err != nil {
		t.Fatal(err)
	}
	f := &faults.LatencyFault{Latency: 200 * time.Millisecond, Direction: faults.ToNode}
	ctx := context.Background()
	if err := faults.Inject(ctx, c, f, "resource"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := echo(svc.Addr(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 400*time.Millisecond {
		t.Fatalf("echo took %v with 200ms latency, want 200ms (+200ms)", took)
	}
	if err := faults.Heal(ctx, c, f, "resource"); err != nil {
		t.Fatal(err)
	}
	p := &faults.PartitionFault{}
	if err := faults.Inject(ctx, c, p, "resource"); err != nil {
		t.Fatal(err)
	}
	if err := echo(svc.Addr(), 300*time.Millisecond); !testcluster.IsTimeout(err) {
		t.Fatalf("echo across a partition: err=%v, want a timeout", err)
	}
	if err := faults.Heal(ctx, c, p, "resource"); err != nil {
		t.Fatal(err)
	}
	if err := echo(svc.Addr(), time.Second); err != nil {
		t.Fatalf("echo after heal: %v", err)
	}
	if err := faults.Inject(ctx, c, &faults.PauseFault{}, "resource"); !errors.Is(err, cluster.ErrNoProcess) {
		t.Fatalf("pause a service: err=%v, want ErrNoProcess", err)
	}
	if err := faults.Inject(ctx, c, p, "nope"); !errors.Is(err, cluster.ErrNoSuchNode) {
		t.Fatalf("inject on an unknown node: err=%v, want ErrNoSuchNode", err)
	}
}
