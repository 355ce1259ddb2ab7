package cluster

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
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

// Inject migrates the slot. It returns [ErrBadFault] outside a Redis
// Cluster, without Key or To, or when n does not serve the slot.
func (f *MigrateSlotFault) Inject(ctx context.Context, n *Node) error {
	src, dst, slot, err := f.nodes(ctx, n)
	if err != nil {
		return err
	}
	f.moved, err = migrateSlot(ctx, src, dst, slot, f.Pause)
	return err
}

// migrateSlot moves slot from src to dst as redis-cli reshard does, waiting
// pause between IMPORTING/MIGRATING and moving the keys, and returns how
// many keys it moved.
func migrateSlot(ctx context.Context, src, dst *Node, slot int, pause time.Duration) (int, error) {
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
		if role, err := nodeRole(ctx, n.Proc.Addr()); err == nil && role == "master" {
			_ = adminDo(ctx, n.Proc.Addr(), "CLUSTER", "SETSLOT", slot, "NODE", dst.ID())
		}
	}
	return moved, nil
}

// Heal does nothing: the slot stays where it moved.
func (f *MigrateSlotFault) Heal(ctx context.Context, n *Node) error { return nil }

// Verify returns e.g. "slot 8718 moved n2->n1 with 2 keys" once the
// cluster names the destination as the slot's owner.
func (f *MigrateSlotFault) Verify(ctx context.Context, n *Node) (string, error) {
	slot := Slot(f.Key)
	c := n.cluster
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
func (f *MigrateSlotFault) nodes(ctx context.Context, n *Node) (src, dst *Node, slot int, err error) {
	if _, err = procOf(n); err != nil {
		return nil, nil, 0, err
	}
	c := n.cluster
	if c == nil || !c.IsRedisCluster() || f.Key == "" || f.To == "" {
		return nil, nil, 0, fmt.Errorf("%w: migrate-slot needs a Redis Cluster node, key and to", ErrBadFault)
	}
	if dst, err = c.Node(f.To); err != nil {
		return nil, nil, 0, err
	}
	slot = Slot(f.Key)
	owner, err := c.SlotOwner(ctx, slot)
	if err != nil {
		return nil, nil, 0, err
	}
	if owner != n {
		return nil, nil, 0, fmt.Errorf("%w: migrate-slot: slot %d is served by %s, not %s", ErrBadFault, slot, owner.Name, n.Name)
	}
	return n, dst, slot, nil
}

func init() { RegisterFault("migrate-slot", func() Fault { return new(MigrateSlotFault) }) }

// Place accepts the nodes of a Redis Cluster only (see [Placer]).
func (f *MigrateSlotFault) Place(t Topology, node string) error { return inRedisCluster(t, node) }
