package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lockpick/lockpick/cluster"
)

// A PeerPartitionFault splits an etcd cluster in two: the member it is
// injected on, with the members named in With, on one side, every other
// member on the other. Peer traffic across the cut is black-holed both
// ways (see netlink.PeerFilter); clients still reach every member. A side
// without a quorum can commit nothing: a leader cut off alone steps down
// after an election timeout, and the other side elects a new one.
type PeerPartitionFault struct {
	// With names the members on the injected member's side, e.g. ["e2"].
	With []string `json:"with"`
}

var (
	_ Fault     = (*PeerPartitionFault)(nil)
	_ Verifier  = (*PeerPartitionFault)(nil)
	_ Describer = (*PeerPartitionFault)(nil)
)

// Inject makes the partition. It returns [cluster.ErrBadFault] on a node
// that is no etcd member and [cluster.ErrNoSuchNode] for an unknown name
// in With.
func (f *PeerPartitionFault) Inject(_ context.Context, n *cluster.Node) error {
	c, side, err := f.sides(n)
	if err != nil {
		return err
	}
	return c.PartitionEtcd(side...)
}

// Heal ends the partition: the held peer connections are closed, so the
// members reconnect.
func (f *PeerPartitionFault) Heal(_ context.Context, n *cluster.Node) error {
	c, _, err := f.sides(n)
	if err != nil {
		return err
	}
	return c.HealEtcdPartition()
}

// Verify returns e.g. "peer traffic cut between e1 and e2,e3" once the
// partition separates n from every member off its side and no peer
// connection across it forwards anything.
func (f *PeerPartitionFault) Verify(_ context.Context, n *cluster.Node) (string, error) {
	c, side, err := f.sides(n)
	if err != nil {
		return "", err
	}
	var other []string
	for _, m := range c.Etcd {
		if slices.Contains(side, m.Name) {
			continue
		}
		if !c.EtcdCut(n.Name, m.Name) {
			return "", noEffect("peer traffic between %s and %s is not cut", n.Name, m.Name)
		}
		other = append(other, m.Name)
	}
	if len(other) == 0 {
		return "", noEffect("every member is on %s's side: nothing is cut", n.Name)
	}
	if open := c.OpenAcrossEtcd(); open != "" {
		return "", noEffect("peer connection %s still forwards", open)
	}
	return fmt.Sprintf("peer traffic cut between %s and %s", strings.Join(side, ","), strings.Join(other, ",")), nil
}

// Describe returns e.g. "peer partition with e2".
func (f *PeerPartitionFault) Describe() string {
	if len(f.With) == 0 {
		return "peer partition"
	}
	return "peer partition with " + strings.Join(f.With, ",")
}

// sides returns n's cluster and the member names on n's side.
func (f *PeerPartitionFault) sides(n *cluster.Node) (*cluster.Cluster, []string, error) {
	c := n.Cluster()
	if c == nil || !cluster.IsEtcdMember(n) {
		return nil, nil, fmt.Errorf("%w: peer-partition: %s is not an etcd member", cluster.ErrBadFault, n.Name)
	}
	side := []string{n.Name}
	for _, w := range f.With {
		if m, err := c.Node(w); err != nil || !cluster.IsEtcdMember(m) {
			return nil, nil, fmt.Errorf("%w: peer-partition: %q is no etcd member", cluster.ErrNoSuchNode, w)
		}
		if !slices.Contains(side, w) {
			side = append(side, w)
		}
	}
	return c, side, nil
}

func init() { RegisterFault("peer-partition", func() Fault { return new(PeerPartitionFault) }) }

// Place accepts etcd members only (see [Placer]).
func (f *PeerPartitionFault) Place(t cluster.Topology, node string) error {
	if t.ZooKeeper > 0 {
		return errors.New("cannot cut ZooKeeper members apart: a member tells the peer it dials its own election address and the peer connects back to it directly, past any proxy lockpick puts between them (docs/zookeeper.md)")
	}
	if t.Etcd == 0 {
		return fmt.Errorf("needs an etcd topology (topology.etcd)")
	}
	return onProcess(t, node)
}
