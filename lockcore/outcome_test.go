package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/lockcore"
)

// replyError is an error reply from Redis, as go-redis types them.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

// refusedPort returns a local address nothing listens on.
func refusedPort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// goRedisErrors returns what go-redis itself says when it cannot connect
// and when its client is closed; no Redis server is needed for either.
func goRedisErrors(tb testing.TB) (refused, closed error) {
	tb.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{MaintNotificationsConfig: lockcore.NoMaintNotifications(), Addr: refusedPort(tb), MaxRetries: -1, DialTimeout: time.Second})
	refused = rdb.Get(ctx, "k").Err()
	_ = rdb.Close()
	closed = rdb.Get(ctx, "k").Err()
	return refused, closed
}

func TestMayHaveRun(t *testing.T) {
	refused, closed := goRedisErrors(t)
	if refused == nil || closed == nil {
		t.Fatalf("go-redis errors: refused %v, closed %v; want both", refused, closed)
	}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	broken := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	indeterminate := &lockcore.OpError{Op: "extend", Key: "k", Indeterminate: true, Err: io.EOF}
	determinate := &lockcore.OpError{Op: "extend", Key: "k", Err: io.EOF}

	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},

		{"context.Canceled", context.Canceled, true},
		{"context.DeadlineExceeded", context.DeadlineExceeded, true},
		{"wrapped DeadlineExceeded", fmt.Errorf("eval: %w", context.DeadlineExceeded), true},

		{"indeterminate OpError", indeterminate, true},
		{"determinate OpError", determinate, false},
		{"wrapped indeterminate OpError", fmt.Errorf("node 2: %w", indeterminate), true},
		{"wrapped determinate OpError", fmt.Errorf("node 2: %w", determinate), false},
		{"OpError's verdict over its cause", &lockcore.OpError{Op: "acquire", Err: context.Canceled}, false},

		{"ErrNotAcquired", lockcore.ErrNotAcquired, false},
		{"ErrNotHeld", lockcore.ErrNotHeld, false},
		{"ErrReleased", lockcore.ErrReleased, false},
		{"ErrExpired", lockcore.ErrExpired, false},
		{"ErrNotReplicated", lockcore.ErrNotReplicated, false},
		{"wrapped ErrNotHeld", fmt.Errorf("%w: %w", lockcore.ErrNotHeld, errors.New("redislock: lock not held")), false},
		{"ErrNotAcquired over ctx and an indeterminate OpError",
			fmt.Errorf("%w: %w: %w", lockcore.ErrNotAcquired, context.Canceled, indeterminate), false},
		{"ErrNotReplicated joined with an indeterminate release",
			errors.Join(fmt.Errorf("%w: 0 of 1 replicas", lockcore.ErrNotReplicated), indeterminate), false},

		{"error reply", replyError("ERR unknown command"), false},
		{"wrapped error reply", fmt.Errorf("eval: %w", replyError("NOSCRIPT No matching script")), false},
		{"redis.Nil", redis.Nil, false},

		{"failed dial", dial, false},
		{"dial cut short by ctx", &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}, false},
		{"ECONNREFUSED", syscall.ECONNREFUSED, false},
		{"ErrPoolTimeout", redis.ErrPoolTimeout, false},
		{"wrapped ErrPoolTimeout", fmt.Errorf("get conn: %w", redis.ErrPoolTimeout), false},
		{"ErrClosed", redis.ErrClosed, false},
		{"go-redis, connection refused", refused, false},
		{"go-redis, client closed", closed, false},
		{"joined definite errors", errors.Join(dial, replyError("ERR x")), false},

		{"read timeout", readTimeout, true},
		{"wrapped read timeout", fmt.Errorf("eval: %w", readTimeout), true},
		{"EOF", io.EOF, true},
		{"connection reset", reset, true},
		{"broken pipe", broken, true},
		{"unknown error", errors.New("something else"), true},
		{"joined, one may have run", errors.Join(dial, readTimeout), true},
		{"joined, wrapped indeterminate OpError", errors.Join(fmt.Errorf("node 0: %w", determinate), fmt.Errorf("node 1: %w", indeterminate)), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, want := lockcore.MayHaveRun(tt.err), tt.want; got != want {
				t.Errorf("MayHaveRun(%v) = %v, want %v", tt.err, got, want)
			}
		})
	}
}

func TestNewOpError(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{context.Canceled, true},
		{syscall.ECONNREFUSED, false},
		{replyError("ERR x"), false},
	} {
		oe := lockcore.NewOpError("acquire", "k", tt.err)
		if got, want := oe.Indeterminate, tt.want; got != want {
			t.Errorf("NewOpError(%v).Indeterminate = %v, want %v", tt.err, got, want)
		}
		if !errors.Is(oe, tt.err) {
			t.Errorf("NewOpError(%v) does not wrap its error", tt.err)
		}
		if got, want := lockcore.MayHaveRun(oe), tt.want; got != want {
			t.Errorf("MayHaveRun(NewOpError(%v)) = %v, want %v", tt.err, got, want)
		}
	}
}
