package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// The commands below go straight to a node's process, past its proxies, on
// connections of their own: the machinery that faults and [Cluster.Restore]
// share.

// Demote makes old a replica of master through old's replication proxy,
// creating the proxy if old never was a replica.
func (c *Cluster) Demote(ctx context.Context, old, master *Node) error {
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
func (c *Cluster) replLinkTo(n *Node, upstream string) (*netlink.Link, error) {
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
	return AdminDo(ctx, addr, "REPLICAOF", host, port)
}

// configSet sends CONFIG SET with name/value pairs straight to the process at addr.
func configSet(ctx context.Context, addr string, pairs ...string) error {
	args := []any{"CONFIG", "SET"}
	for _, p := range pairs {
		args = append(args, p)
	}
	return AdminDo(ctx, addr, args...)
}

// AdminDo sends one command straight to the process at addr, on a
// connection of its own, past any proxy.
func AdminDo(ctx context.Context, addr string, args ...any) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	return rdb.Do(ctx, args...).Err()
}

// MigrateSlot moves slot from src to dst as redis-cli reshard does, waiting
// pause between IMPORTING/MIGRATING and moving the keys, and returns how
// many keys it moved.
func MigrateSlot(ctx context.Context, src, dst *Node, slot int, pause time.Duration) (int, error) {
	// The source's client outwaits MIGRATE's own 2s timeout.
	sc := redis.NewClient(&redis.Options{Addr: src.Proc.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 3 * time.Second, PoolSize: 1})
	dc := adminClient(dst.Proc.Addr())
	defer sc.Close()
	defer dc.Close()
	fail := func(step string, err error) error {
		return fmt.Errorf("cluster: migrate slot %d %s->%s: %s: %w", slot, src.Name, dst.Name, step, err)
	}
	if err := dc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", src.ID()).Err(); err != nil {
		return 0, fail("importing", err)
	}
	if err := sc.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.ID()).Err(); err != nil {
		return 0, fail("migrating", err)
	}
	if pause > 0 {
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	host, port, _ := net.SplitHostPort(dst.Proc.Addr())
	moved := 0
	for range 1000 { // bounded: 100 keys a round
		keys, err := sc.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			return moved, fail("getkeysinslot", err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 2000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		reply, err := sc.Do(ctx, args...).Text()
		if err != nil {
			return moved, fail("migrate", err)
		}
		if reply != "NOKEY" { // NOKEY: they expired in between
			moved += len(keys)
		}
	}
	for _, c := range []*redis.Client{dc, sc} {
		if err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dst.ID()).Err(); err != nil {
			return moved, fail("setslot node", err)
		}
	}
	// Then every other primary, as redis-cli does, rather than leave them
	// to gossip (best effort: one that does not answer learns it later).
	for _, n := range src.cluster.Nodes {
		if n == src || n == dst {
			continue
		}
		if role, err := NodeRole(ctx, n.Proc.Addr()); err == nil && role == "master" {
			_ = AdminDo(ctx, n.Proc.Addr(), "CLUSTER", "SETSLOT", slot, "NODE", dst.ID())
		}
	}
	return moved, nil
}

// ClusterFailover sends CLUSTER FAILOVER [FORCE|TAKEOVER] (mode "", "force"
// or "takeover") to the Redis Cluster replica n and waits up to timeout
// (default 5s) until it reports role master. It returns [ErrBadFault] for
// an unknown mode and for a node outside a Redis Cluster.
func ClusterFailover(ctx context.Context, n *Node, mode string, timeout time.Duration) error {
	what := strings.TrimSpace("cluster failover " + strings.ToLower(mode))
	if n == nil || n.Proc == nil {
		return fmt.Errorf("%w: %s", ErrNoProcess, nodeName(n))
	}
	if n.Peer == nil {
		return fmt.Errorf("%w: cluster-failover: %s is not a Redis Cluster node", ErrBadFault, n.Name)
	}
	args := []any{"CLUSTER", "FAILOVER"}
	switch strings.ToLower(mode) {
	case "":
	case "force", "takeover":
		args = append(args, strings.ToUpper(mode))
	default:
		return fmt.Errorf("%w: cluster-failover: mode %q (want force or takeover)", ErrBadFault, mode)
	}
	if err := AdminDo(ctx, n.Proc.Addr(), args...); err != nil {
		return fmt.Errorf("cluster: %s on %s: %w", what, n.Name, err)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return Poll(wait, func() error {
		role, err := NodeRole(wait, n.Proc.Addr())
		if err == nil && role != "master" {
			err = fmt.Errorf("cluster: %s still has role %q after %s", n.Name, role, what)
		}
		return err
	})
}

func nodeName(n *Node) string {
	if n == nil {
		return "<nil>"
	}
	return n.Name
}

// A SelfView is what a Redis Cluster node says of itself in CLUSTER NODES.
type SelfView struct {
	Flags       string // e.g. "myself,master"
	Master      bool   // flagged master
	Slots       int    // how many slots it serves
	ConfigEpoch int64
}

// ClusterSelf returns what the Redis Cluster node at addr says of itself;
// ok is false if it does not list itself.
func ClusterSelf(ctx context.Context, addr string) (v SelfView, ok bool, err error) {
	view, err := clusterNodes(ctx, addr)
	if err != nil {
		return SelfView{}, false, err
	}
	for _, e := range view {
		if !e.has("myself") {
			continue
		}
		v = SelfView{Flags: e.flags, Master: e.has("master"), ConfigEpoch: e.configEpoch}
		for _, r := range e.slots {
			v.Slots += r[1] - r[0] + 1
		}
		return v, true, nil
	}
	return SelfView{}, false, nil
}
