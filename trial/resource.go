package trial

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The protected resource is a counter owned by the runner, served over a
// one-line text protocol so every client reaches it through a proxy of its
// own (and so can be delayed or cut alone):
//
//	READ [<fence>]      → VALUE <n> | FENCED <highest fence seen>
//	WRITE <n> <fence>   → OK | FENCED <highest fence seen>
//
// A fence of 0 means the client presents none. A fenced resource rejects a
// read or write whose fence is lower than the highest it has seen: the
// fencing-token check of Kleppmann's critique, on every request, so a
// holder's read-increment-write is ordered by its token as a whole.
type resource struct {
	ln     net.Listener
	fenced bool

	mu      sync.Mutex
	value   int64
	highest int64
	wg      sync.WaitGroup
}

// errFenced is a fenced resource's refusal of a read or write.
var errFenced = errors.New("refused: a newer fencing token was seen")

func startResource(fenced bool) (*resource, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &resource{ln: ln, fenced: fenced}
	r.wg.Go(r.serve)
	return r, nil
}

func (r *resource) addr() string { return r.ln.Addr().String() }

func (r *resource) close() {
	_ = r.ln.Close()
	r.wg.Wait()
}

func (r *resource) serve() {
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		conns.Go(func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				if _, err := fmt.Fprintln(c, r.handle(sc.Text())); err != nil {
					return
				}
			}
		})
	}
}

func (r *resource) handle(line string) string {
	f := strings.Fields(line)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case len(f) == 1 && f[0] == "READ":
		return "VALUE " + strconv.FormatInt(r.value, 10)
	case len(f) == 2 && f[0] == "READ":
		fence, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return "ERR bad number"
		}
		if refused := r.admit(fence); refused != "" {
			return refused
		}
		return "VALUE " + strconv.FormatInt(r.value, 10)
	case len(f) == 3 && f[0] == "WRITE":
		v, err1 := strconv.ParseInt(f[1], 10, 64)
		fence, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return "ERR bad number"
		}
		if refused := r.admit(fence); refused != "" {
			return refused
		}
		r.value = v
		return "OK"
	}
	return "ERR unknown command"
}

// admit applies the fencing check to a request presenting fence, with r.mu
// held: it returns the refusal of a fenced resource for a fence lower than
// the highest seen, else records the fence and returns "".
func (r *resource) admit(fence int64) string {
	if r.fenced && fence < r.highest {
		return "FENCED " + strconv.FormatInt(r.highest, 10)
	}
	r.highest = max(r.highest, fence)
	return ""
}

// A resourceClient talks to the resource over one connection.
type resourceClient struct {
	addr string
	conn net.Conn
	rd   *bufio.Reader
}

func (c *resourceClient) call(ctx context.Context, req string) (string, error) {
	if c.conn == nil {
		d := net.Dialer{Timeout: 500 * time.Millisecond}
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return "", err
		}
		c.conn, c.rd = conn, bufio.NewReader(conn)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	_ = c.conn.SetDeadline(deadline)
	_, err := fmt.Fprintln(c.conn, req)
	var line string
	if err == nil {
		line, err = c.rd.ReadString('\n')
	}
	if err != nil {
		c.close() // the connection's state is unknown; start afresh
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func (c *resourceClient) read(ctx context.Context, fence int64) (int64, error) {
	resp, err := c.call(ctx, fmt.Sprintf("READ %d", fence))
	if err != nil {
		return 0, err
	}
	if strings.HasPrefix(resp, "FENCED ") {
		return 0, errFenced
	}
	v, ok := strings.CutPrefix(resp, "VALUE ")
	if !ok {
		return 0, fmt.Errorf("resource: %s", resp)
	}
	return strconv.ParseInt(v, 10, 64)
}

func (c *resourceClient) write(ctx context.Context, v, fence int64) error {
	resp, err := c.call(ctx, fmt.Sprintf("WRITE %d %d", v, fence))
	switch {
	case err != nil:
		return err
	case resp == "OK":
		return nil
	case strings.HasPrefix(resp, "FENCED"):
		return errFenced
	}
	return fmt.Errorf("resource: %s", resp)
}

func (c *resourceClient) close() {
	if c != nil && c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}
