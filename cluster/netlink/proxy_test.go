package netlink_test

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
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

// TestLink_UpstreamWhileRetargeted reads a link's upstream while another
// goroutine retargets it; run with -race.
func TestLink_UpstreamWhileRetargeted(t *testing.T) {
	t.Parallel()
	p := netlink.NewProxies()
	t.Cleanup(p.Close)
	a, b := echoServer(t), echoServer(t)
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
