package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A BusPartitionFault splits a Redis Cluster in two: the node it is
// injected on, with the nodes named in With, on one side, every other node
// on the other. Cluster bus links across the cut are black-holed both ways
// (see netlink.BusFilter), and a replica on the other side of its primary stops
// replicating (the primary's Peer link refuses it). Clients still reach
// every node: the minority side keeps answering them until it notices it
// cannot reach a majority of primaries (cluster-node-timeout), while the
// majority fails its primaries over to replicas on their side.
type BusPartitionFault struct {
	// With names the nodes on the injected node's side, e.g. ["n5"].
	With []string `json:"with"`

	mu   sync.Mutex
	cuts []replCut // the replication links Inject cut, for Heal and Verify
}

// A replCut is a replica's replication stream cut by a bus partition: the
// Peer link of its primary on the other side.
type replCut struct {
	primary, replica *cluster.Node
}

var (
	_ Fault     = (*BusPartitionFault)(nil)
	_ Verifier  = (*BusPartitionFault)(nil)
	_ Describer = (*BusPartitionFault)(nil)
)

// Inject makes the partition. It returns [cluster.ErrBadFault] outside a Redis
// Cluster or while another bus partition is in place, and [cluster.ErrNoSuchNode]
// for an unknown name in With.
func (f *BusPartitionFault) Inject(ctx context.Context, n *cluster.Node) error {
	c, side, err := f.sides(n)
	if err != nil {
		return err
	}
	// Who replicates whom is read now, not as started: failovers move it.
	var cuts []replCut
	for _, r := range c.Nodes {
		if p := c.PrimaryOf(ctx, r); p != nil && slices.Contains(side, r.Name) != slices.Contains(side, p.Name) {
			cuts = append(cuts, replCut{primary: p, replica: r})
		}
	}
	if err := c.SetBusSides(side); err != nil {
		return err
	}
	f.mu.Lock()
	f.cuts = cuts
	f.mu.Unlock()
	for _, rc := range cuts {
		if err := rc.primary.Peer.CutBy("bus-partition"); err != nil {
			return err
		}
	}
	return nil
}

// Heal ends the partition: held bus links are closed, so the peers
// reconnect, and replication resumes.
func (f *BusPartitionFault) Heal(ctx context.Context, n *cluster.Node) error {
	c, _, err := f.sides(n)
	if err != nil {
		return err
	}
	f.mu.Lock()
	cuts := f.cuts
	f.cuts = nil
	f.mu.Unlock()
	if err := c.SetBusSides(nil); err != nil {
		return err
	}
	for _, rc := range cuts {
		if err := rc.primary.Peer.RestoreBy("bus-partition"); err != nil {
			return err
		}
	}
	return nil
}

// Verify returns e.g. "bus cut between n2 and n1,n3,n4,n5,n6; replication
// n2->n5 cut" once no bus link across the cut forwards anything and every
// replica across it reports its replication link down.
func (f *BusPartitionFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	c, side, err := f.sides(n)
	if err != nil {
		return "", err
	}
	var other []string
	for _, m := range c.Nodes {
		if !slices.Contains(side, m.Name) {
			other = append(other, m.Name)
			if !c.BusCut(n.ID(), m.ID()) {
				return "", noEffect("bus between %s and %s is open", n.Name, m.Name)
			}
		}
	}
	if open := c.OpenAcrossBus(); open != "" {
		return "", noEffect("bus link %s still forwards", open)
	}
	effect := fmt.Sprintf("bus cut between %s and %s", strings.Join(side, ","), strings.Join(other, ","))
	f.mu.Lock()
	cuts := f.cuts
	f.mu.Unlock()
	var repl []string
	for _, rc := range cuts {
		wait, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := cluster.Poll(wait, func() error {
			if cluster.ReplicaLinkUp(wait, rc.replica.Proc.Addr()) == nil {
				return noEffect("%s still replicates from %s", rc.replica.Name, rc.primary.Name)
			}
			return nil
		})
		cancel()
		if err != nil {
			return "", err
		}
		repl = append(repl, rc.primary.Name+"->"+rc.replica.Name)
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
func (f *BusPartitionFault) sides(n *cluster.Node) (*cluster.Cluster, []string, error) {
	if _, err := procOf(n); err != nil {
		return nil, nil, err
	}
	c := n.Cluster()
	if c == nil || !c.IsRedisCluster() {
		return nil, nil, fmt.Errorf("%w: bus-partition: %s is not a Redis Cluster node", cluster.ErrBadFault, n.Name)
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

func init() { RegisterFault("bus-partition", func() Fault { return new(BusPartitionFault) }) }

// Place accepts the nodes of a Redis Cluster only (see [Placer]).
func (f *BusPartitionFault) Place(t cluster.Topology, node string) error {
	return inRedisCluster(t, node)
}
