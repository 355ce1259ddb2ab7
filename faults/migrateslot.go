package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A MigrateSlotFault moves one hash slot of a Redis Cluster from the node
// it is injected on to another primary, the way redis-cli --cluster
// reshard does: the destination is set IMPORTING and the source MIGRATING,
// the slot's keys are moved with MIGRATE (each with its TTL), and both are
// then told the destination owns it. While the keys move, the source
// answers for keys it still has and sends the rest to the destination
// with an ASK redirect.
type MigrateSlotFault struct {
	// Key names the slot to move: the slot Key hashes to.
	Key string `json:"key"`
	// To is the destination primary's name, e.g. "n1".
	To string `json:"to"`
	// Pause waits this long between IMPORTING/MIGRATING and moving the
	// keys, leaving the slot half-migrated. default: 0.
	Pause time.Duration `json:"pause"`

	moved int // keys moved by the last Inject
}

var (
	_ Fault     = (*MigrateSlotFault)(nil)
	_ Verifier  = (*MigrateSlotFault)(nil)
	_ Describer = (*MigrateSlotFault)(nil)
)

// Inject migrates the slot. It returns [cluster.ErrBadFault] outside a Redis
// Cluster, without Key or To, or when n does not serve the slot.
func (f *MigrateSlotFault) Inject(ctx context.Context, n *cluster.Node) error {
	src, dst, slot, err := f.nodes(ctx, n)
	if err != nil {
		return err
	}
	f.moved, err = cluster.MigrateSlot(ctx, src, dst, slot, f.Pause)
	return err
}

// Heal does nothing: the slot stays where it moved.
func (f *MigrateSlotFault) Heal(ctx context.Context, n *cluster.Node) error { return nil }

// Verify returns e.g. "slot 8718 moved n2->n1 with 2 keys" once the
// cluster names the destination as the slot's owner.
func (f *MigrateSlotFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	slot := cluster.Slot(f.Key)
	c := n.Cluster()
	owner, err := c.SlotOwner(ctx, slot)
	if err != nil {
		return "", err
	}
	if owner.Name != f.To {
		return "", noEffect("slot %d is served by %s, not %s", slot, owner.Name, f.To)
	}
	return fmt.Sprintf("slot %d moved %s->%s with %d keys", slot, n.Name, f.To, f.moved), nil
}

// Describe returns e.g. "migrate slot of lock to n1".
func (f *MigrateSlotFault) Describe() string {
	return fmt.Sprintf("migrate slot of %s to %s", f.Key, f.To)
}

// nodes resolves the source (n, which must serve the slot), destination and slot.
func (f *MigrateSlotFault) nodes(ctx context.Context, n *cluster.Node) (src, dst *cluster.Node, slot int, err error) {
	if _, err = procOf(n); err != nil {
		return nil, nil, 0, err
	}
	c := n.Cluster()
	if c == nil || !c.IsRedisCluster() || f.Key == "" || f.To == "" {
		return nil, nil, 0, fmt.Errorf("%w: migrate-slot needs a Redis Cluster node, key and to", cluster.ErrBadFault)
	}
	if dst, err = c.Node(f.To); err != nil {
		return nil, nil, 0, err
	}
	slot = cluster.Slot(f.Key)
	owner, err := c.SlotOwner(ctx, slot)
	if err != nil {
		return nil, nil, 0, err
	}
	if owner != n {
		return nil, nil, 0, fmt.Errorf("%w: migrate-slot: slot %d is served by %s, not %s", cluster.ErrBadFault, slot, owner.Name, n.Name)
	}
	return n, dst, slot, nil
}

func init() { RegisterFault("migrate-slot", func() Fault { return new(MigrateSlotFault) }) }

// Place accepts the nodes of a Redis Cluster only (see [Placer]).
func (f *MigrateSlotFault) Place(t cluster.Topology, node string) error {
	return inRedisCluster(t, node)
}
