package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// A BusPartitionFault splits a Redis Cluster in two: the node it is
// injected on, with the nodes named in With, on one side, every other node
// on the other. Cluster bus links across the cut are black-holed both ways
// (see busFilter), and a replica on the other side of its primary stops
// replicating (the primary's Peer link refuses it). Clients still reach
// every node: the minority side keeps answering them until it notices it
// cannot reach a majority of primaries (cluster-node-timeout), while the
// majority fails its primaries over to replicas on their side.
type BusPartitionFault struct {
	// With names the nodes on the injected node's side, e.g. ["n5"].
	With []string `json:"with"`
}

var (
	_ Fault     = (*BusPartitionFault)(nil)
	_ Verifier  = (*BusPartitionFault)(nil)
	_ Describer = (*BusPartitionFault)(nil)
)

// Inject makes the partition. It returns [ErrBadFault] outside a Redis
// Cluster and [ErrNoSuchNode] for an unknown name in With.
func (f *BusPartitionFault) Inject(ctx context.Context, n *Node) error {
	c, side, err := f.sides(n)
	if err != nil {
		return err
	}
	c.setBusSides(side)
	for _, l := range f.replicationCuts(c, side) {
		if err := l.Cut(); err != nil {
			return err
		}
	}
	return nil
}

// Heal ends the partition: held bus links are closed, so the peers
// reconnect, and replication resumes.
func (f *BusPartitionFault) Heal(ctx context.Context, n *Node) error {
	c, side, err := f.sides(n)
	if err != nil {
		return err
	}
	c.setBusSides(nil)
	for _, l := range f.replicationCuts(c, side) {
		if err := l.Restore(); err != nil {
			return err
		}
	}
	return nil
}

// Verify returns e.g. "bus cut between n2 and n1,n3,n4,n5,n6; replication
// n2->n5 cut" if the cut is in place.
func (f *BusPartitionFault) Verify(ctx context.Context, n *Node) (string, error) {
	c, side, err := f.sides(n)
	if err != nil {
		return "", err
	}
	var other []string
	for _, m := range c.Nodes {
		if !slices.Contains(side, m.Name) {
			other = append(other, m.Name)
			if !c.busCut(n.ID(), m.ID()) {
				return "", noEffect("bus between %s and %s is open", n.Name, m.Name)
			}
		}
	}
	effect := fmt.Sprintf("bus cut between %s and %s", strings.Join(side, ","), strings.Join(other, ","))
	var repl []string
	for _, r := range c.Nodes {
		if l := r.ReplLink(); l != nil && slices.Contains(f.replicationCuts(c, side), l) {
			if !l.IsCut() {
				return "", noEffect("replication of %s is open", r.Name)
			}
			repl = append(repl, strings.TrimSuffix(l.Name(), "-peer")+"->"+r.Name)
		}
	}
	if len(repl) > 0 {
		effect += "; replication " + strings.Join(repl, ", ") + " cut"
	}
	return effect, nil
}

// Describe returns e.g. "bus partition with n5".
func (f *BusPartitionFault) Describe() string {
	if len(f.With) == 0 {
		return "bus partition"
	}
	return "bus partition with " + strings.Join(f.With, ",")
}

// sides returns n's cluster and the names on n's side.
func (f *BusPartitionFault) sides(n *Node) (*Cluster, []string, error) {
	if _, err := procOf(n); err != nil {
		return nil, nil, err
	}
	c := n.cluster
	if c == nil || !c.IsRedisCluster() {
		return nil, nil, fmt.Errorf("%w: bus-partition: %s is not a Redis Cluster node", ErrBadFault, n.Name)
	}
	side := []string{n.Name}
	for _, w := range f.With {
		if _, err := c.Node(w); err != nil {
			return nil, nil, err
		}
		if !slices.Contains(side, w) {
			side = append(side, w)
		}
	}
	return c, side, nil
}

// replicationCuts returns the Peer links of primaries whose replicas (as
// started) are on the other side.
func (f *BusPartitionFault) replicationCuts(c *Cluster, side []string) []*Link {
	var out []*Link
	for i, r := range c.Nodes {
		if i < c.topo.Shards {
			continue
		}
		p := c.Nodes[i%c.topo.Shards]
		if slices.Contains(side, r.Name) != slices.Contains(side, p.Name) && !slices.Contains(out, p.Peer) {
			out = append(out, p.Peer)
		}
	}
	return out
}

func init() { RegisterFault("bus-partition", func() Fault { return new(BusPartitionFault) }) }
