// Command extlock is a lock outside lockpick's binary, driven through the
// worker protocol: a single-instance SET NX PX lock on go-redis, with a
// compare-and-delete release, a compare-and-PEXPIRE extend, and fencing
// tokens from INCR when asked. It stands for a user's own lock, and shows
// how little a program needs to be put through lockpick's scenarios:
//
//	go build -o bin/extlock ./examples/extlock
//	lockpick run failover-lock-loss --subject-cmd bin/extlock
//
// It reads one JSON request per line on stdin and writes one JSON reply
// per line on stdout until stdin ends. It imports nothing from lockpick.
//
// With --block it waits for the lock itself when lockpick sends wait_ms (a
// blocking acquire), trying again every 10ms until the wait is over; with
// --renew it renews each lease it grants every third of the TTL (a
// compare-and-PEXPIRE) until released, and reports each renewal on a line
// of its own. Declare them (--subject-caps block,renew):
//
//	lockpick run watchdog-pause --subject-cmd "bin/extlock --block --renew" --subject-shape single --subject-caps block,renew
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

type request struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Key       string `json:"key"`
	TTLMS     int64  `json:"ttl_ms"`
	TimeoutMS int64  `json:"timeout_ms"`
	WaitMS    int64  `json:"wait_ms"`
	Master    string `json:"master"`
	Fenced    bool   `json:"fenced"`
	Token     string `json:"token"`
}

type reply struct {
	ID      int64  `json:"id"`
	OK      bool   `json:"ok"`
	Unknown bool   `json:"unknown,omitempty"`
	Error   string `json:"error,omitempty"`
	Token   string `json:"token,omitempty"`
	Fence   int64  `json:"fence,omitempty"`
	ValidMS *int64 `json:"valid_ms,omitempty"`
}

// renewed is the line --renew writes after each renewal: {"renewed": {...}}.
type renewed struct {
	Token    string `json:"token"`
	OK       bool   `json:"ok"`
	ValidMS  int64  `json:"valid_ms,omitempty"`
	AtMonoNS int64  `json:"at_mono_ns,omitempty"` // CLOCK_MONOTONIC when the renewal was sent
	Unknown  bool   `json:"unknown,omitempty"`
	Error    string `json:"error,omitempty"`
}

var (
	// acquire sets the key if free and, fenced, returns the next fencing
	// token; -1 if the key is taken.
	acquire = redis.NewScript(`
if not redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return -1 end
if ARGV[3] == "1" then return redis.call("incr", KEYS[2]) end
return 0`)
	release = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end
return 0`)
	extend = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end
return 0`)
)

// unsafeRelease breaks the lock on purpose: release deletes the key
// without checking that it still holds the caller's token, the classic
// bug that frees another client's lock. lockpick explore should find it.
var unsafeRelease = flag.Bool("unsafe-release", false, "release with a plain DEL, without checking the token (a broken lock, for lockpick explore)")

// constantToken breaks the lock the classic way: SET lock 1 NX PX, and a
// bare DEL to release. Every holder gets the token "1", so the lock cannot
// tell its holders apart, and a late holder's release frees the next
// holder's lock. lockpick must not take the token as the holder's name.
var constantToken = flag.Bool("constant-token", false, `hand every holder the token "1" and release with a plain DEL (SET lock 1 NX PX: a broken lock)`)

var (
	block = flag.Bool("block", false, "wait for the lock, up to the request's wait_ms, trying every 10ms (declare block)")
	renew = flag.Bool("renew", false, "renew each lease every TTL/3 until released, reporting each renewal (declare renew)")
)

// retryEvery is how often a blocking acquire tries again.
const retryEvery = 10 * time.Millisecond

func main() {
	flag.Parse()
	redis.SetLogger(quiet{})
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, "extlock:", err)
		os.Exit(1)
	}
}

// serve answers requests until stdin ends.
func serve() error {
	clients := map[string]*redis.Client{}
	out := &writer{enc: json.NewEncoder(os.Stdout)}
	leases := map[string]*renewer{} // by token: the leases --renew renews
	defer func() {
		for _, r := range leases {
			r.stop()
		}
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return fmt.Errorf("bad request: %w", err)
		}
		c, ok := clients[req.Master]
		if !ok {
			// No retries: a retried command would hide that the first
			// try may have run.
			c = redis.NewClient(&redis.Options{Addr: req.Master, MaxRetries: -1, DialTimeout: 250 * time.Millisecond,
				ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, ContextTimeoutEnabled: true})
			clients[req.Master] = c
		}
		if r, ok := leases[req.Token]; ok && req.Op == "release" {
			// Stop renewing before the release: a renewal must not
			// outlive it.
			r.stop()
			delete(leases, req.Token)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.TimeoutMS)*time.Millisecond)
		r, since := handle(ctx, c, req)
		cancel()
		if *renew && req.Op == "acquire" && r.OK {
			leases[r.Token] = startRenewer(c, req, r.Token, since, out)
		}
		r.ID = req.ID
		if err := out.write(r); err != nil {
			return err
		}
	}
	return in.Err()
}

// A writer writes whole lines to stdout, from the main loop and the
// renewers.
type writer struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *writer) write(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(v)
}

// handle answers req; for an ok acquire it also returns when the try that
// set the key was sent, on CLOCK_MONOTONIC: the key lives a TTL from then.
func handle(ctx context.Context, c *redis.Client, req request) (reply, int64) {
	start := time.Now()
	ttl := time.Duration(req.TTLMS) * time.Millisecond
	switch req.Op {
	case "acquire":
		token := newToken()
		if *constantToken {
			token = "1"
		}
		var wait time.Duration
		if *block {
			wait = time.Duration(req.WaitMS) * time.Millisecond
		}
		for {
			sent, at := time.Now(), monoNow()
			r := tryAcquire(ctx, c, req, token)
			switch {
			case r.OK:
				r.ValidMS = validMS(ttl, start, sent)
				return r, at
			case r.Unknown:
				// The try may have set the key: the wait ends here, and
				// whatever it set goes (a key lockpick never hears of
				// would keep the lock from everyone until it expires).
				cleanup, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				_ = release.Run(cleanup, c, []string{req.Key}, token).Err()
				cancel()
				return r, 0
			case time.Since(start)+retryEvery >= wait:
				// Every try said no (or never reached Redis): surely not
				// acquired, and nothing left behind.
				if wait > 0 && r.Error == "not acquired" {
					r.Error = "timed out waiting"
				}
				return r, 0
			}
			time.Sleep(retryEvery)
		}
	case "release":
		var n int64
		var err error
		if *unsafeRelease || *constantToken {
			n, err = c.Del(ctx, req.Key).Result()
		} else {
			n, err = release.Run(ctx, c, []string{req.Key}, req.Token).Int64()
		}
		switch {
		case err != nil:
			return failed(err), 0
		case n == 0:
			return reply{Error: "not held"}, 0
		}
		return reply{OK: true}, 0
	case "extend":
		n, err := extend.Run(ctx, c, []string{req.Key}, req.Token, req.TTLMS).Int64()
		switch {
		case err != nil:
			return failed(err), 0
		case n == 0:
			return reply{Error: "not held"}, 0
		}
		return reply{OK: true, ValidMS: validMS(ttl, start, start)}, 0
	}
	return reply{Error: "unsupported op " + req.Op}, 0
}

// tryAcquire makes one try: SET NX PX, and INCR of the fencing counter
// when fenced.
func tryAcquire(ctx context.Context, c *redis.Client, req request, token string) reply {
	fenced := "0"
	if req.Fenced {
		fenced = "1"
	}
	// The counter is in the key's hash slot when the key has no braces
	// (lockcore's default fence key handles every key), so the script
	// also runs on a Redis Cluster.
	fence, err := acquire.Run(ctx, c, []string{req.Key, "{" + req.Key + "}:fence"}, token, req.TTLMS, fenced).Int64()
	switch {
	case err != nil:
		return failed(err)
	case fence < 0:
		return reply{Error: "not acquired"}
	}
	return reply{OK: true, Token: token, Fence: fence}
}

// A renewer renews one lease until stopped.
type renewer struct {
	quit chan struct{}
	done chan struct{}
}

// stop stops the renewer and waits until it has.
func (r *renewer) stop() {
	close(r.quit)
	<-r.done
}

// startRenewer renews the lease of token, set by a try sent at setAt
// (CLOCK_MONOTONIC), every third of the TTL with a compare-and-PEXPIRE,
// and reports each renewal on out. It gives the lease up, and says so,
// when a renewal finds the key gone, or when renewals failed until the
// next could not land before the lease's deadline.
func startRenewer(c *redis.Client, req request, token string, setAt int64, out *writer) *renewer {
	r := &renewer{quit: make(chan struct{}), done: make(chan struct{})}
	ttl := time.Duration(req.TTLMS) * time.Millisecond
	every := ttl / 3
	go func() {
		defer close(r.done)
		deadline := setAt + int64(ttl)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.quit:
				return
			case <-t.C:
			}
			at := monoNow()
			ctx, cancel := context.WithTimeout(context.Background(), min(every, time.Duration(deadline-at)))
			n, err := extend.Run(ctx, c, []string{req.Key}, token, req.TTLMS).Int64()
			cancel()
			var note renewed
			switch {
			case err == nil && n == 1:
				// PEXPIRE counts the TTL from when Redis ran it, after at.
				deadline = at + int64(ttl)
				note = renewed{Token: token, OK: true, ValidMS: req.TTLMS, AtMonoNS: at}
			case err == nil:
				note = renewed{Token: token, Error: "not held"}
			case monoNow()+int64(every) < deadline:
				continue // the next tick may still renew it in time
			default:
				f := failed(err)
				note = renewed{Token: token, Unknown: f.Unknown, Error: "renewal: " + f.Error}
			}
			_ = out.write(map[string]renewed{"renewed": note})
			if !note.OK {
				return
			}
		}
	}()
	return r
}

// monoNow reads CLOCK_MONOTONIC, in nanoseconds: the clock of lockpick's
// history.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// validMS is how long the lease set by a try sent at sent is valid,
// counted from start, when the request came: what is left of the TTL after
// the time the try took, plus the time before it (the wait of a blocking
// acquire).
func validMS(ttl time.Duration, start, sent time.Time) *int64 {
	ms := (sent.Sub(start) + ttl - time.Since(sent)).Milliseconds()
	return &ms
}

// failed reports a Redis error: definite when the command surely did not
// run (no connection, or an error reply), unknown otherwise.
func failed(err error) reply {
	var rerr redis.Error
	var nerr *net.OpError
	definite := errors.As(err, &rerr) || (errors.As(err, &nerr) && nerr.Op == "dial")
	return reply{Unknown: !definite, Error: err.Error()}
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
