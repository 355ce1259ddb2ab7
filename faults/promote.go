package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/cluster"
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
// It returns [cluster.ErrNoLink] when n is not a replica.
func (f *PromoteFault) Inject(ctx context.Context, n *cluster.Node) error {
	if _, err := procOf(n); err != nil {
		return err
	}
	if cluster.IsPostgresNode(n) {
		return cluster.PostgresPromote(ctx, n)
	}
	repl, err := linkOf(n, ReplicationLink)
	if err != nil {
		return err
	}
	c := n.Cluster()
	if c == nil {
		return fmt.Errorf("%w: %s belongs to no cluster", cluster.ErrNoSuchNode, n.Name)
	}
	var old *cluster.Node
	for _, m := range c.Nodes {
		if m.Proc != nil && m.Proc.Addr() == repl.Upstream() {
			old = m
		}
	}
	if err := cluster.AdminDo(ctx, n.Proc.Addr(), "REPLICAOF", "NO", "ONE"); err != nil {
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
		if err := c.Demote(ctx, old, n); err != nil {
			return err
		}
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cluster.Poll(wait, func() error {
		role, err := cluster.NodeRole(wait, n.Proc.Addr())
		if err == nil && role != "master" {
			err = fmt.Errorf("cluster: %s has role %q after promotion", n.Name, role)
		}
		return err
	})
}

// Heal does nothing: a promotion is not undone.
func (f *PromoteFault) Heal(ctx context.Context, n *cluster.Node) error { return nil }

// Verify returns "role master" if the node's INFO replication, asked on its
// own address, says so, and an error wrapping [ErrNoEffect] otherwise.
func (f *PromoteFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	p, err := procOf(n)
	if err != nil {
		return "", err
	}
	if cluster.IsPostgresNode(n) {
		rec, err := cluster.PostgresInRecovery(ctx, n, time.Second)
		switch {
		case err != nil:
			return "", fmt.Errorf("cluster: pg_is_in_recovery of %s: %w", n.Name, err)
		case rec:
			return "", noEffect("%s is still a standby (pg_is_in_recovery true)", n.Name)
		}
		return "primary (pg_is_in_recovery false)", nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	role, err := cluster.NodeRole(ctx, p.Addr())
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

func init() { RegisterFault("promote", func() Fault { return new(PromoteFault) }) }

// Place accepts the nodes that start as replicas only (see [Placer]); a
// node chosen as the fault fires must be a replica then. A Redis Cluster
// refuses REPLICAOF (cluster-failover is its promote). Of PostgreSQL
// nodes, it accepts the standby p2 (pg_promote()), without demote.
func (f *PromoteFault) Place(t cluster.Topology, node string) error {
	if t.Postgres > 0 {
		return onPostgresReplica(t, node, f.Demote)
	}
	if t.Shards > 0 {
		return errors.New("cannot act in a Redis Cluster, which refuses REPLICAOF; use cluster-failover")
	}
	return onReplica(t, node)
}

// onPostgresReplica returns nil for p2 of a PostgreSQL topology with a
// standby, or "", and why not otherwise.
func onPostgresReplica(t cluster.Topology, node string, demote bool) error {
	switch {
	case t.Postgres < 2:
		return errors.New("needs a PostgreSQL standby to promote (topology: {postgres: 2})")
	case demote:
		return errors.New("demote is not offered on PostgreSQL nodes (the old primary would need pg_rewind)")
	case node != "" && node != "p2":
		return fmt.Errorf("acts on the PostgreSQL standby p2, not %q", node)
	}
	return nil
}
