package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
)

// Every Verify looks at the node itself, not at what Inject returned: a
// process fault probes the process's own address or its /proc entry, a
// network fault reads the link's toxics or state, a clock fault reads the
// node's clock back (clockread.go). Each check is bounded by its own
// timeouts, a second at most (two for a clock read from a PostgreSQL node
// or a ZooKeeper member, which starts a backend or a session first), so a
// run can verify every fault it fires.

// noEffect returns an error wrapping [ErrNoEffect].
func noEffect(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNoEffect, fmt.Sprintf(format, args...))
}

// procState returns the state letter of /proc/pid/stat ('R', 'S', 'T', ...).
func procState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, syscall.ESRCH) {
		// The process died between open and read: as gone as ENOENT.
		return 0, fs.ErrNotExist
	}
	if err != nil {
		return 0, err
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("cluster: unreadable /proc/%d/stat", pid)
	}
	return b[i+2], nil
}

// checkStopped returns nil once pid is stopped by a signal (state 'T', or
// 't' under a tracer), and an error wrapping [ErrNoEffect] if it is not
// within 200ms (SIGSTOP takes effect asynchronously) or does not exist.
// who names the process in errors.
func checkStopped(ctx context.Context, pid int, who string) error {
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		st, err := procState(pid)
		if err != nil {
			return noEffect("%s (pid %d): %v", who, pid, err)
		}
		if st == 'T' || st == 't' {
			return nil
		}
		if time.Now().After(deadline) {
			return noEffect("%s (pid %d) is in state %c, not stopped", who, pid, st)
		}
		if err := cluster.SleepCtx(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}

// A timeReading is one TIME reply and the host's wall clock when it was
// read (the midpoint of the round trip, so at most rtt/2 off).
type timeReading struct {
	server, host time.Time
	rtt          time.Duration
}

// offset returns how far the server's clock is ahead of the host's.
func (r timeReading) offset() time.Duration { return r.server.Sub(r.host) }

// readTime sends TIME to the process at addr three times on one connection
// and returns the reading with the shortest round trip, the least uncertain.
func readTime(ctx context.Context, rdb *redis.Client) (timeReading, error) {
	r, err := bestOf3(func() (time.Time, error) { return rdb.Time(ctx).Result() })
	if err != nil {
		return timeReading{}, fmt.Errorf("cluster: TIME: %w", err)
	}
	return r, nil
}

// bestOf3 reads a server's clock with read three times and returns the
// reading with the shortest round trip, the least uncertain.
func bestOf3(read func() (time.Time, error)) (timeReading, error) {
	var best timeReading
	for i := range 3 {
		t0 := time.Now()
		srv, err := read()
		t1 := time.Now()
		if err != nil {
			return timeReading{}, err
		}
		r := timeReading{server: srv, host: t0.Add(t1.Sub(t0) / 2), rtt: t1.Sub(t0)}
		if i == 0 || r.rtt < best.rtt {
			best = r
		}
	}
	return best, nil
}

// timeClient returns a one-connection client of the process at addr with
// short timeouts that also honours its context's deadline, for reading TIME.
func timeClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, ContextTimeoutEnabled: true,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
}

// signedDuration formats d rounded to the millisecond with its sign, e.g.
// "+5.001s" or "-30s".
func signedDuration(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
