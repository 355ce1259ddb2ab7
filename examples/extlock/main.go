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
	"time"

	"github.com/redis/go-redis/v9"
)

type request struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Key       string `json:"key"`
	TTLMS     int64  `json:"ttl_ms"`
	TimeoutMS int64  `json:"timeout_ms"`
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
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
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
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.TimeoutMS)*time.Millisecond)
		r := handle(ctx, c, req)
		cancel()
		r.ID = req.ID
		if err := out.Encode(r); err != nil {
			return err
		}
	}
	return in.Err()
}

func handle(ctx context.Context, c *redis.Client, req request) reply {
	start := time.Now()
	ttl := time.Duration(req.TTLMS) * time.Millisecond
	switch req.Op {
	case "acquire":
		token := newToken()
		if *constantToken {
			token = "1"
		}
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
		return reply{OK: true, Token: token, Fence: fence, ValidMS: validMS(ttl, start)}
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
			return failed(err)
		case n == 0:
			return reply{Error: "not held"}
		}
		return reply{OK: true}
	case "extend":
		n, err := extend.Run(ctx, c, []string{req.Key}, req.Token, req.TTLMS).Int64()
		switch {
		case err != nil:
			return failed(err)
		case n == 0:
			return reply{Error: "not held"}
		}
		return reply{OK: true, ValidMS: validMS(ttl, start)}
	}
	return reply{Error: "unsupported op " + req.Op}
}

// validMS is what is left of the TTL after the time the call took.
func validMS(ttl time.Duration, start time.Time) *int64 {
	ms := (ttl - time.Since(start)).Milliseconds()
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
