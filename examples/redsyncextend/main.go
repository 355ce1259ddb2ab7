// Command redsyncextend is a Redlock lock program over the worker
// protocol, built on go-redsync/redsync at a version of its go.mod, to put
// the library itself, at the version users ran and at its fix, through
// the same attack: go-redsync/redsync#72 and PR #71, an Extend that said
// yes although the extension came back after the lease it extended had
// ended. The source is the same for both versions; only the module file
// differs:
//
//	cd examples/redsyncextend
//	go build -o ../../bin/redsyncextend-v4.4.1 .                          # go.mod: v4.4.1, with the fix
//	go build -modfile go.v4.3.0.mod -o ../../bin/redsyncextend-v4.3.0 .  # v4.3.0, the last release before it
//
// (The fix came in v4.4.0, which the Go module proxy does not serve;
// v4.4.1 adds only a deprecation note to Valid.)
//
// It takes one redsync.Mutex per acquire over the scenario's masters (one
// go-redis v8 client each, the adapter both versions ship), renews each
// lease it grants with Mutex.ExtendContext every third of the TTL, and
// reports each renewal (it declares renew). When ExtendContext says yes,
// the lease is reported valid for the TTL from when the renewal was sent,
// as a user of either version reads "Extend resets the mutex's expiry";
// when it says no, the lease is given up and lockpick told. v4.3.0 says
// yes whenever a majority ran the PEXPIRE, however late their replies
// came; from v4.4.0 it also checks that what is left of the TTL after the
// call is above 0 (ErrExtendFailed otherwise). `make reproducers` builds
// both and runs examples/reproducers/redsync-extend-validity.yaml.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-redis/redis/v8"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v8"
	"golang.org/x/sys/unix"
)

type request struct {
	ID        int64    `json:"id"`
	Op        string   `json:"op"`
	Key       string   `json:"key"`
	TTLMS     int64    `json:"ttl_ms"`
	TimeoutMS int64    `json:"timeout_ms"`
	Nodes     []string `json:"nodes"`
	Masters   int      `json:"masters"`
	Token     string   `json:"token"`
}

type reply struct {
	ID      int64  `json:"id"`
	OK      bool   `json:"ok"`
	Unknown bool   `json:"unknown,omitempty"`
	Error   string `json:"error,omitempty"`
	Token   string `json:"token,omitempty"`
	ValidMS *int64 `json:"valid_ms,omitempty"`
}

// renewed is the notice written after each renewal: {"renewed": {...}}.
type renewed struct {
	Token    string `json:"token"`
	OK       bool   `json:"ok"`
	ValidMS  int64  `json:"valid_ms,omitempty"`
	AtMonoNS int64  `json:"at_mono_ns,omitempty"` // CLOCK_MONOTONIC when the renewal was sent
	Error    string `json:"error,omitempty"`
}

func main() {
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, "redsyncextend:", err)
		os.Exit(1)
	}
}

// A lease is a grant being renewed.
type lease struct {
	m    *redsync.Mutex
	quit chan struct{}
	done chan struct{}
}

// stop stops the lease's renewals and waits until they have.
func (l *lease) stop() {
	select {
	case <-l.quit:
	default:
		close(l.quit)
	}
	<-l.done
}

// serve answers requests until stdin ends.
func serve() error {
	out := &writer{enc: json.NewEncoder(os.Stdout)}
	var rs *redsync.Redsync
	leases := map[string]*lease{}
	defer func() {
		for _, l := range leases {
			l.stop()
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return fmt.Errorf("bad request: %w", err)
		}
		if rs == nil && len(req.Nodes) > 0 {
			rs = newRedsync(req)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.TimeoutMS)*time.Millisecond)
		var r reply
		switch {
		case req.Op == "hello":
			r = reply{OK: true}
			if rs != nil {
				warmUp(rs)
			}
		case rs == nil:
			r = reply{Error: "no nodes in the request"}
		case req.Op == "acquire":
			var l *lease
			r, l = acquire(ctx, rs, req)
			if l != nil {
				leases[r.Token] = l
				go l.renew(req, r.Token, out)
			}
		case req.Op == "release":
			r = release(ctx, leases[req.Token])
			delete(leases, req.Token)
		default:
			r = reply{Error: "unsupported op " + req.Op}
		}
		cancel()
		r.ID = req.ID
		if err := out.write(r); err != nil {
			return err
		}
	}
	return in.Err()
}

// newRedsync returns a redsync over the request's masters, one go-redis
// client each, without retries (a retried command hides that the first try
// may have run).
func newRedsync(req request) *redsync.Redsync {
	n := max(req.Masters, 1)
	var pools []rsredis.Pool
	for _, addr := range req.Nodes[:min(n, len(req.Nodes))] {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 250 * time.Millisecond})
		pools = append(pools, goredis.NewPool(c))
	}
	return redsync.New(pools...)
}

// warmUp takes, extends and releases a lock of its own on every node
// once, so that redsync's scripts are in each node's script cache before
// the trial: otherwise the first renewal's EVALSHA comes back NOSCRIPT and
// its EVAL goes a round trip later, and an attack on the replies would
// meet the script loading, not the renewal. Errors are ignored: the trial
// will meet them.
func warmUp(rs *redsync.Redsync) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m := rs.NewMutex(fmt.Sprintf("redsyncextend:warmup:%d", os.Getpid()), redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	if m.LockContext(ctx) == nil {
		_, _ = m.ExtendContext(ctx)
		_, _ = m.UnlockContext(ctx)
	}
}

// acquire makes one attempt and, granted, returns the lease to renew.
func acquire(ctx context.Context, rs *redsync.Redsync, req request) (reply, *lease) {
	ttl := time.Duration(req.TTLMS) * time.Millisecond
	m := rs.NewMutex(req.Key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	start := time.Now()
	if err := m.LockContext(ctx); err != nil {
		if errors.Is(err, redsync.ErrFailed) {
			// Short of a majority redsync releases what it took: surely not held.
			return reply{Error: "not acquired"}, nil
		}
		return reply{Unknown: true, Error: err.Error()}, nil
	}
	// What redsync's own validity leaves: the TTL less the time taken and
	// its 1% drift.
	valid := (ttl - time.Since(start) - ttl/100).Milliseconds()
	return reply{OK: true, Token: m.Value(), ValidMS: &valid}, &lease{m: m, quit: make(chan struct{}), done: make(chan struct{})}
}

// release stops l's renewals, then unlocks it.
func release(ctx context.Context, l *lease) reply {
	if l == nil {
		return reply{Error: "not held"}
	}
	l.stop()
	ok, err := l.m.UnlockContext(ctx)
	switch {
	case ok:
		return reply{OK: true}
	case err != nil:
		return reply{Unknown: true, Error: err.Error()}
	}
	return reply{Error: "not held"}
}

// renew extends the lease every third of the TTL until stopped or an
// extension fails, and reports each on out.
func (l *lease) renew(req request, token string, out *writer) {
	defer close(l.done)
	ttl := time.Duration(req.TTLMS) * time.Millisecond
	for {
		select {
		case <-l.quit:
			return
		case <-time.After(ttl / 3):
		}
		at := monoNow()
		// No bound but the client's read timeout: a late reply is the attack.
		ok, err := l.m.ExtendContext(context.Background())
		note := renewed{Token: token, OK: true, ValidMS: req.TTLMS, AtMonoNS: at}
		if !ok {
			note = renewed{Token: token, Error: "extend failed"}
			if err != nil {
				note.Error = "extend: " + err.Error()
			}
		}
		_ = out.write(map[string]renewed{"renewed": note})
		if !ok {
			return
		}
	}
}

// A writer writes whole lines to stdout, from the main loop and the
// renewals.
type writer struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *writer) write(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(v)
}

// monoNow reads CLOCK_MONOTONIC, in nanoseconds: the clock of lockpick's
// history.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
