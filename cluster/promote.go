package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// A PromoteFault makes a replica the master at once, without sentinels: the
// node gets REPLICAOF NO ONE and every other replica's replication proxy is
// pointed at it, so they follow the new master. The old master keeps
// running as a master (split brain) unless Demote is set. Use it on
// topologies without sentinels, which would fight the change; with
// sentinels use [SentinelFailoverFault].
type PromoteFault struct {
	// Demote makes the old master a replica of the new one, through a new
	// replication proxy, as sentinels do; it then drops the writes the new
	// master never saw.
	Demote bool `json:"demote"`
}

var (
	_ Fault    = (*PromoteFault)(nil)
	_ Verifier = (*PromoteFault)(nil)
)

// Inject promotes the replica n and returns once it reports role master.
// It returns [ErrNoLink] when n is not a replica.
func (f *PromoteFault) Inject(ctx context.Context, n *Node) error {
	if _, err := procOf(n); err != nil {
		return err
	}
	repl, err := linkOf(n, ReplicationLink)
	if err != nil {
		return err
	}
	c := n.cluster
	if c == nil {
		return fmt.Errorf("%w: %s belongs to no cluster", ErrNoSuchNode, n.Name)
	}
	var old *Node
	for _, m := range c.Nodes {
		if m.Proc != nil && m.Proc.Addr() == repl.Upstream() {
			old = m
		}
	}
	if err := replicaOf(ctx, n.Proc.Addr(), "NO", "ONE"); err != nil {
		return fmt.Errorf("cluster: promote %s: %w", n.Name, err)
	}
	for _, r := range c.Nodes {
		if l := r.ReplLink(); r != n && r != old && l != nil {
			if err := l.SetUpstream(n.Proc.Addr()); err != nil {
				return err
			}
		}
	}
	if f.Demote && old != nil {
		if err := c.demote(ctx, old, n); err != nil {
			return err
		}
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return poll(wait, func() error {
		role, err := nodeRole(wait, n.Proc.Addr())
		if err == nil && role != "master" {
			err = fmt.Errorf("cluster: %s has role %q after promotion", n.Name, role)
		}
		return err
	})
}

// Heal does nothing: a promotion is not undone.
func (f *PromoteFault) Heal(ctx context.Context, n *Node) error { return nil }

// Verify returns "role master" if the node's INFO replication, asked on its
// own address, says so, and an error wrapping [ErrNoEffect] otherwise.
func (f *PromoteFault) Verify(ctx context.Context, n *Node) (string, error) {
	p, err := procOf(n)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	role, err := nodeRole(ctx, p.Addr())
	if err != nil {
		return "", fmt.Errorf("cluster: role of %s: %w", n.Name, err)
	}
	if role != "master" {
		return "", noEffect("%s has role %q", n.Name, role)
	}
	return "role master", nil
}

// Describe returns "promote" or "promote, demote old master".
func (f *PromoteFault) Describe() string {
	if f.Demote {
		return "promote, demote old master"
	}
	return "promote"
}

// demote makes old a replica of master through old's replication proxy,
// creating the proxy if old never was a replica.
func (c *Cluster) demote(ctx context.Context, old, master *Node) error {
	repl, err := c.replLinkTo(old, master.Proc.Addr())
	if err != nil {
		return err
	}
	host, rport, err := net.SplitHostPort(repl.Addr())
	if err != nil {
		return err
	}
	// Announce the client proxy, as configured replicas do, so INFO and
	// sentinels name the address clients can reach.
	if err := configSet(ctx, old.Proc.Addr(), "replica-announce-ip", "127.0.0.1", "replica-announce-port", port(old.Addr())); err != nil {
		return fmt.Errorf("cluster: demote %s: %w", old.Name, err)
	}
	if err := replicaOf(ctx, old.Proc.Addr(), host, rport); err != nil {
		return fmt.Errorf("cluster: demote %s: %w", old.Name, err)
	}
	return nil
}

// replLinkTo returns n's replication proxy pointed at upstream, creating it
// if n never was a replica; n's lock makes two concurrent demotions create
// one proxy.
func (c *Cluster) replLinkTo(n *Node, upstream string) (*Link, error) {
	if n.Repl != nil {
		return n.Repl, n.Repl.SetUpstream(upstream)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.demoted == nil && n.spare != nil {
		n.demoted, n.spare = n.spare, nil // made by an earlier demotion
	}
	if n.demoted != nil {
		return n.demoted, n.demoted.SetUpstream(upstream)
	}
	l, err := c.proxies.Add(n.Name+"-repl", upstream)
	if err != nil {
		return nil, err
	}
	n.demoted = l
	return l, nil
}

// replicaOf sends REPLICAOF host port straight to the process at addr.
func replicaOf(ctx context.Context, addr, host, port string) error {
	return adminDo(ctx, addr, "REPLICAOF", host, port)
}

// configSet sends CONFIG SET with name/value pairs straight to the process at addr.
func configSet(ctx context.Context, addr string, pairs ...string) error {
	args := []any{"CONFIG", "SET"}
	for _, p := range pairs {
		args = append(args, p)
	}
	return adminDo(ctx, addr, args...)
}

// adminDo sends one command straight to the process at addr, on a
// connection of its own, past any proxy.
func adminDo(ctx context.Context, addr string, args ...any) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	return rdb.Do(ctx, args...).Err()
}

func init() { RegisterFault("promote", func() Fault { return new(PromoteFault) }) }

// Place accepts the nodes that start as replicas only (see [Placer]); a
// node chosen as the fault fires must be a replica then. A Redis Cluster
// refuses REPLICAOF (cluster-failover is its promote).
func (f *PromoteFault) Place(t Topology, node string) error {
	if t.Shards > 0 {
		return errors.New("cannot act in a Redis Cluster, which refuses REPLICAOF; use cluster-failover")
	}
	return onReplica(t, node)
}
