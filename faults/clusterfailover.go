package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A ClusterFailoverFault makes a Redis Cluster replica take over its
// primary's slots with CLUSTER FAILOVER, as an operator does. By default
// the failover is the safe, coordinated one: the primary stops taking
// writes until the replica has caught up. Mode "force" skips that
// handshake (the primary may be unreachable) but still holds an election;
// "takeover" skips the election too, so a replica cut off from its
// primary promotes itself at once: writes it never received are lost.
type ClusterFailoverFault struct {
	// Mode is "", "force" or "takeover".
	Mode string `json:"mode"`
	// Timeout bounds the wait for the replica to report role master.
	// default: 5s.
	Timeout time.Duration `json:"timeout"`
}

var (
	_ Fault     = (*ClusterFailoverFault)(nil)
	_ Verifier  = (*ClusterFailoverFault)(nil)
	_ Describer = (*ClusterFailoverFault)(nil)
)

// Inject sends CLUSTER FAILOVER [FORCE|TAKEOVER] to the replica n and waits
// until it reports role master. It returns [cluster.ErrBadFault] for an unknown
// mode and for a node outside a Redis Cluster.
func (f *ClusterFailoverFault) Inject(ctx context.Context, n *cluster.Node) error {
	return cluster.ClusterFailover(ctx, n, f.Mode, f.Timeout)
}

// Heal does nothing: a failover is not undone.
func (f *ClusterFailoverFault) Heal(ctx context.Context, n *cluster.Node) error { return nil }

// Verify returns "role master, serving N slots" if the node says so.
func (f *ClusterFailoverFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	self, ok, err := cluster.ClusterSelf(ctx, n.Proc.Addr())
	if err != nil {
		return "", err
	}
	if !ok {
		return "", noEffect("%s does not list itself", n.Name)
	}
	if !self.Master {
		return "", noEffect("%s is %s", n.Name, self.Flags)
	}
	return fmt.Sprintf("role master, serving %d slots (epoch %d)", self.Slots, self.ConfigEpoch), nil
}

// Describe returns e.g. "cluster failover takeover".
func (f *ClusterFailoverFault) Describe() string {
	return strings.TrimSpace("cluster failover " + strings.ToLower(f.Mode))
}

func init() { RegisterFault("cluster-failover", func() Fault { return new(ClusterFailoverFault) }) }

// Place accepts the replicas of a Redis Cluster only (see [Placer]): a
// replica takes its primary's slots over.
func (f *ClusterFailoverFault) Place(t cluster.Topology, node string) error {
	if err := inRedisCluster(t, node); err != nil {
		return err
	}
	return onReplica(t, node)
}
