package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/cluster"

	"github.com/redis/go-redis/v9"
)

// A ClientPauseFault sends CLIENT PAUSE to a node: it stops serving
// clients (with Mode "write", only commands that write, EVAL included)
// and queues their requests until healed with CLIENT UNPAUSE, when it runs
// those whose connections are still open. A client that times out but
// keeps its connection (Netty's, Redisson's) has its request run after
// the pause, which it believes failed; go-redis closes the connection on a
// timeout, and its request is dropped.
//
// Only writes are paused: under CLIENT PAUSE ALL, Redis 7.0 serves no other
// connection either, CLIENT UNPAUSE included, so no heal could end it.
type ClientPauseFault struct {
	// Mode is "write", the only one. default: "write".
	Mode string `json:"mode"`
}

var (
	_ Fault    = (*ClientPauseFault)(nil)
	_ Verifier = (*ClientPauseFault)(nil)
)

// clientPauseLimit bounds a pause whose heal never comes (lockpick heals
// every fault at the end of a trial).
const clientPauseLimit = time.Hour

func (f *ClientPauseFault) mode() (string, error) {
	if f.Mode == "" || f.Mode == "write" {
		return "WRITE", nil
	}
	return "", fmt.Errorf("%w: client-pause mode %q (only write: a pause of all clients blocks CLIENT UNPAUSE too)", cluster.ErrBadFault, f.Mode)
}

// Inject sends CLIENT PAUSE to the node's own address.
func (f *ClientPauseFault) Inject(ctx context.Context, n *cluster.Node) error {
	mode, err := f.mode()
	if err != nil {
		return err
	}
	p, err := procOf(n)
	if err != nil {
		return err
	}
	return cluster.AdminDo(ctx, p.Addr(), "client", "pause", clientPauseLimit.Milliseconds(), mode)
}

// Heal sends CLIENT UNPAUSE; a node that is down is left alone.
func (f *ClientPauseFault) Heal(ctx context.Context, n *cluster.Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	if err := cluster.AdminDo(ctx, p.Addr(), "client", "unpause"); err != nil && cluster.Ping(p.Addr(), 200*time.Millisecond) == nil {
		return err
	}
	return nil
}

// Verify returns "writes paused (a probe SET got no reply in 150ms)" if a
// write to a probe key through the
// node's own address does not answer, and an error wrapping
// [ErrNoEffect] if it does. The probe never runs: its connection closes
// when the read times out, and Redis drops a closed client's queued
// command.
func (f *ClientPauseFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	p, err := procOf(n)
	if err != nil {
		return "", err
	}
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 150 * time.Millisecond, ContextTimeoutEnabled: true})
	defer rdb.Close()
	err = rdb.Set(ctx, "lockpick:pause-probe", "1", time.Minute).Err()
	var ne interface{ Timeout() bool }
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return "writes paused (a probe SET got no reply in 150ms)", nil
	}
	return "", noEffect("%s answered a probe SET during CLIENT PAUSE: %v", n.Name, err)
}

// Describe returns "client-pause write".
func (f *ClientPauseFault) Describe() string { return "client-pause write" }

func init() { RegisterFault("client-pause", func() Fault { return new(ClientPauseFault) }) }

// Place accepts the Redis nodes only (see [Placer]).
func (f *ClientPauseFault) Place(t cluster.Topology, node string) error { return onRedisNode(t, node) }
