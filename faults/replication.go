package faults

import (
	"context"
	"sync"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/netlink"
)

// A CutReplicationFault partitions a replica from its master: the
// replication connection is closed and reconnects are refused, while
// clients and sentinels still reach both nodes. Writes acknowledged by the
// master from then on never reach the replica, the window in which a
// failover loses a lock. In a Redis Cluster the link is the one the replica
// replicates through when the fault is injected; Heal and Verify keep to
// it, whatever failovers happen meanwhile.
type CutReplicationFault struct {
	mu  sync.Mutex
	cut *netlink.Link // the link Inject cut, until Heal
}

var (
	_ Fault    = (*CutReplicationFault)(nil)
	_ Verifier = (*CutReplicationFault)(nil)
)

// Inject cuts the link. It returns [cluster.ErrNoLink] on a node that is not a replica.
func (f *CutReplicationFault) Inject(ctx context.Context, n *cluster.Node) error {
	l, err := linkOf(n, ReplicationLink)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.cut = l
	f.mu.Unlock()
	return l.CutBy("cut-replication")
}

// link returns the link Inject cut, or the node's replication link now.
func (f *CutReplicationFault) link(n *cluster.Node) (*netlink.Link, error) {
	f.mu.Lock()
	l := f.cut
	f.mu.Unlock()
	if l != nil {
		return l, nil
	}
	return linkOf(n, ReplicationLink)
}

// Heal restores the link; the replica resyncs by itself.
func (f *CutReplicationFault) Heal(ctx context.Context, n *cluster.Node) error {
	l, err := f.link(n)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.cut = nil
	f.mu.Unlock()
	return l.RestoreBy("cut-replication")
}

// Verify returns "replication link cut" if the node's replication proxy is
// cut and the node replicates through it, and an error wrapping
// [ErrNoEffect] if the proxy is open or the node replicates past it.
// Sentinels do that to a replica about 10 s after they first see it
// replicate through an address other than the master's (+fix-slave-config),
// so a long trial can find the proxy bypassed.
func (f *CutReplicationFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	l, err := f.link(n)
	if err != nil {
		return "", err
	}
	if !l.IsCut() {
		return "", noEffect("replication link %s is open", l.Name())
	}
	if n.Proc != nil {
		r, err := cluster.Info(ctx, n.Proc.Addr(), "replication")
		if err == nil && r["master_port"] != port(l.Addr()) {
			return "", noEffect("%s replicates from port %q, past its cut replication link %s", n.Name, r["master_port"], l.Name())
		}
	}
	return "replication link cut", nil
}

// Describe returns "cut replication".
func (f *CutReplicationFault) Describe() string { return "cut replication" }

func init() { RegisterFault("cut-replication", func() Fault { return new(CutReplicationFault) }) }

// Place accepts the nodes that start as replicas only (see [Placer]); a
// node chosen as the fault fires must be a replica then.
func (f *CutReplicationFault) Place(t cluster.Topology, node string) error { return onReplica(t, node) }
