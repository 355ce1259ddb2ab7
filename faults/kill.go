package faults

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A KillFault crashes a node with kill -9 and leaves it down until healed;
// Heal starts it again on the same port with the data it persisted (see
// [cluster.Persistence]). On a stopped node Inject does nothing; on a running one
// Heal does nothing.
type KillFault struct{}

var (
	_ Fault    = (*KillFault)(nil)
	_ Verifier = (*KillFault)(nil)
)

// Inject sends SIGKILL and waits for the process to exit.
func (f *KillFault) Inject(ctx context.Context, n *cluster.Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	return p.Kill()
}

// Heal restarts the node if it is down and waits until it answers PING.
func (f *KillFault) Heal(ctx context.Context, n *cluster.Node) error { return startNode(ctx, n) }

// Verify returns "down" if the process's own address refuses connections,
// and an error wrapping [ErrNoEffect] if it accepts them (even without
// answering, as a paused node does): a Redis node is sent a PING, an etcd
// member, a PostgreSQL node or a ZooKeeper member only dialled.
func (f *KillFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	p, err := procOf(n)
	if err != nil {
		return "", err
	}
	if cluster.IsEtcdMember(n) || cluster.IsPostgresNode(n) || cluster.IsZooKeeperMember(n) {
		err = refused(p.Addr(), 200*time.Millisecond)
	} else {
		err = cluster.Ping(p.Addr(), 200*time.Millisecond)
	}
	switch {
	case err == nil:
		return "", noEffect("%s still answers on %s", n.Name, p.Addr())
	case errors.Is(err, syscall.ECONNREFUSED):
		return "down", nil
	}
	return "", noEffect("%s does not refuse connections on %s: %v", n.Name, p.Addr(), err)
}

// refused dials addr and returns the dial's error, or nil once it connects
// (an etcd member speaks no RESP, so only the dial can be judged).
func refused(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	return c.Close()
}

// Describe returns "kill".
func (f *KillFault) Describe() string { return "kill" }

func init() { RegisterFault("kill", func() Fault { return new(KillFault) }) }

// Place accepts the Redis nodes, etcd members, PostgreSQL nodes and ZooKeeper
// members (see [Placer]).
func (f *KillFault) Place(t cluster.Topology, node string) error { return onProcess(t, node) }
