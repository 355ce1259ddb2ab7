package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster/netlink"
	"github.com/lockpick/lockpick/lockcore"
)

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// A Redis Cluster ([Topology.Shards] > 0) is built the way redis-cli
// --cluster create builds one, without its pauses: every node starts with
// cluster-enabled, primaries get their slot ranges and distinct config
// epochs, n1 meets every other node, replicas are told whom to replicate,
// and Start returns once every node sees every other, agrees on who owns
// which slot, and says cluster_state:ok.
//
// Each node has three proxies. Link is the clients' path (faults on
// clients go there). Peer is the address the node announces
// (cluster-announce-port): replicas replicate through it and MOVED
// redirects name it, so a client must dial a node's Link when told its
// Peer address (see [Node.Peer]). Bus carries the cluster bus into the
// node (cluster-announce-bus-port), through a filter that can cut the links
// between chosen nodes (see [netlink.BusFilter] and faults.BusPartitionFault).

// startRedisCluster launches and joins the nodes of a Redis Cluster.
func (c *Cluster) startRedisCluster(ctx context.Context) error {
	topo := c.topo
	total := topo.Shards * (1 + topo.Replicas)
	for i := 1; i <= total; i++ {
		n := &Node{Name: "n" + strconv.Itoa(i), Shard: (i-1)%topo.Shards + 1, cluster: c}
		var err error
		if n.Link, err = c.proxies.Add(n.Name, "127.0.0.1:1"); err != nil {
			return err
		}
		if n.Peer, err = c.proxies.Add(n.Name+"-peer", "127.0.0.1:1"); err != nil {
			return err
		}
		bus, err := netlink.ReservePort()
		if err != nil {
			return err
		}
		c.reservations = append(c.reservations, bus)
		filter, err := netlink.NewBusFilter(n.Name, "127.0.0.1:"+strconv.Itoa(bus.Port()),
			func(sender string) bool { return c.BusCut(sender, n.ID()) }, c.busNodeName)
		if err != nil {
			return err
		}
		c.filters = append(c.filters, filter)
		if n.Bus, err = c.proxies.Add(n.Name+"-bus", filter.Addr()); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, n)
		cfg := append([]string{
			"repl-diskless-sync-delay 0",
			"cluster-enabled yes",
			"cluster-config-file nodes.conf",
			"cluster-node-timeout " + strconv.FormatInt(topo.NodeTimeout.Milliseconds(), 10),
			"cluster-port " + strconv.Itoa(bus.Port()),
			"cluster-announce-ip 127.0.0.1",
			"cluster-announce-port " + port(n.Peer.Addr()),
			"cluster-announce-bus-port " + port(n.Bus.Addr()),
			// A replica cut off from its primary for long may still fail
			// over: the scenarios decide how stale a promoted replica is.
			"cluster-replica-validity-factor 0",
			"cluster-allow-replica-migration no",
		}, topo.Config...)
		pcfg, err := c.persistence(n.Name).Config()
		if err != nil {
			return err
		}
		cfg = append(append(cfg, pcfg...), topo.NodeConfig[n.Name]...)
		if n.Proc, err = c.backend.Launch(ctx, ProcSpec{Name: n.Name, Config: cfg}); err != nil {
			return err
		}
		if err = n.Link.SetUpstream(n.Proc.Addr()); err != nil {
			return err
		}
		if err = n.Peer.SetUpstream(n.Proc.Addr()); err != nil {
			return err
		}
	}
	return c.joinRedisCluster(ctx)
}

// BusCut reports whether a bus partition separates the nodes with ids a and b.
func (c *Cluster) BusCut(a, b string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	sa, oka := c.busSides[a]
	sb, okb := c.busSides[b]
	return oka && okb && sa != sb
}

// busNodeName returns the name of the node with that id, or the id if no
// node has it.
func (c *Cluster) busNodeName(id string) string {
	for _, n := range c.Nodes {
		if n.ID() == id {
			return n.Name
		}
	}
	return id
}

// SetBusSides partitions the cluster bus: nodes in side (by name) on one
// side, every other node on the other; nil heals. Open links across the
// new cut are black-holed, held links across a healed one closed.
func (c *Cluster) SetBusSides(side []string) error {
	c.mu.Lock()
	if side != nil && c.busSides != nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: a bus partition is already in place", ErrBadFault)
	}
	if side == nil {
		c.busSides = nil
	} else {
		c.busSides = map[string]int{}
		for _, n := range c.Nodes {
			c.busSides[n.ID()] = 2
			if slices.Contains(side, n.Name) {
				c.busSides[n.ID()] = 1
			}
		}
	}
	filters := c.filters
	c.mu.Unlock()
	for _, f := range filters {
		f.Recheck()
	}
	return nil
}

// OpenAcrossBus returns a bus connection across the current cut that still
// forwards, as "n1->n2", or "".
func (c *Cluster) OpenAcrossBus() string {
	c.mu.Lock()
	filters := c.filters
	c.mu.Unlock()
	return firstOpenAcross(filters)
}

// firstOpenAcross returns the first connection across a cut that one of
// filters (bus or peer filters) still forwards, or "".
func firstOpenAcross[F interface{ OpenAcross() string }](filters []F) string {
	for _, f := range filters {
		if open := f.OpenAcross(); open != "" {
			return open
		}
	}
	return ""
}

// persistence returns node name's persistence mode.
func (c *Cluster) persistence(name string) Persistence {
	if p, ok := c.topo.NodePersistence[name]; ok {
		return p
	}
	return c.topo.Persistence
}

// joinRedisCluster assigns slots and epochs, makes the nodes meet, sets up
// replication and waits until the cluster is settled.
func (c *Cluster) joinRedisCluster(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	shards := c.topo.Shards
	ids := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		rdb := adminClient(n.Proc.Addr())
		id, err := rdb.ClusterMyID(ctx).Result()
		if err == nil && i < shards {
			lo, hi := SlotRange(i, shards)
			err = rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
			if err == nil {
				err = rdb.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
			}
		}
		_ = rdb.Close()
		if err != nil {
			return &StartError{Node: n.Name, LogPath: n.Proc.LogPath(), Err: fmt.Errorf("cluster setup: %w", err)}
		}
		ids[i] = id
		n.setID(id)
	}
	first := adminClient(c.Nodes[0].Proc.Addr())
	defer first.Close()
	for _, n := range c.Nodes[1:] {
		err := first.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", port(n.Peer.Addr()), port(n.Bus.Addr())).Err()
		if err != nil {
			return &StartError{Node: c.Nodes[0].Name, LogPath: c.Nodes[0].Proc.LogPath(), Err: fmt.Errorf("cluster meet %s: %w", n.Name, err)}
		}
	}
	for _, n := range c.Nodes {
		err := Poll(ctx, func() error {
			view, err := clusterNodes(ctx, n.Proc.Addr())
			if err != nil {
				return err
			}
			if len(view) != len(c.Nodes) {
				return fmt.Errorf("knows %d of %d nodes", len(view), len(c.Nodes))
			}
			for _, e := range view {
				if e.has("handshake") || e.has("noaddr") {
					return fmt.Errorf("node %s still %s", e.id, e.flags)
				}
			}
			return nil
		})
		if err != nil {
			return &StartError{Node: n.Name, LogPath: n.Proc.LogPath(), Err: fmt.Errorf("cluster never met: %w", err)}
		}
	}
	for i, n := range c.Nodes[shards:] {
		primary := ids[i%shards]
		err := Poll(ctx, func() error { return AdminDo(ctx, n.Proc.Addr(), "CLUSTER", "REPLICATE", primary) })
		if err != nil {
			return &StartError{Node: n.Name, LogPath: n.Proc.LogPath(), Err: fmt.Errorf("cluster replicate: %w", err)}
		}
	}
	return c.waitClusterSettled(ctx)
}

// waitClusterSettled waits until every replica streams from its primary,
// and every node says cluster_state:ok and names the same slot owners.
func (c *Cluster) waitClusterSettled(ctx context.Context) error {
	var want string
	for i, n := range c.Nodes {
		err := Poll(ctx, func() error {
			if i >= c.topo.Shards { // a replica
				if err := ReplicaLinkUp(ctx, n.Proc.Addr()); err != nil {
					return err
				}
			}
			m, err := clusterInfo(ctx, n.Proc.Addr())
			if err != nil {
				return err
			}
			if m["cluster_state"] != "ok" {
				return fmt.Errorf("cluster_state=%s", m["cluster_state"])
			}
			view, err := clusterNodes(ctx, n.Proc.Addr())
			if err != nil {
				return err
			}
			owners := slotOwners(view)
			if want == "" {
				want = owners
			}
			if owners != want {
				return fmt.Errorf("slot owners %s, n1 says %s", owners, want)
			}
			return nil
		})
		if err != nil {
			return &StartError{Node: n.Name, LogPath: n.Proc.LogPath(), Err: fmt.Errorf("cluster never settled: %w", err)}
		}
	}
	return nil
}

// SlotRange returns the slots primary i (from 0) of a Redis Cluster of
// shards primaries starts with, as redis-cli splits them.
func SlotRange(i, shards int) (lo, hi int) {
	per := float64(slots) / float64(shards)
	lo = int(float64(i) * per)
	hi = int(float64(i+1)*per) - 1
	if i == shards-1 {
		hi = slots - 1
	}
	return lo, hi
}

// A clusterEntry is one line of CLUSTER NODES.
type clusterEntry struct {
	id, addr, flags, primary string
	configEpoch              int64
	slots                    [][2]int
	migrating                bool // a slot is MIGRATING or IMPORTING on it (only in the node's own line)
}

func (e clusterEntry) has(flag string) bool {
	return strings.Contains(","+e.flags+",", ","+flag+",")
}

// clusterNodes asks the process at addr for its CLUSTER NODES view.
func clusterNodes(ctx context.Context, addr string) ([]clusterEntry, error) {
	rdb := adminClient(addr)
	defer rdb.Close()
	s, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	return parseClusterNodes(s)
}

// parseClusterNodes parses CLUSTER NODES output: id ip:port@cport flags
// primary ping pong epoch link slot...
func parseClusterNodes(s string) ([]clusterEntry, error) {
	var out []clusterEntry
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("cluster nodes: bad line %q", line)
		}
		e := clusterEntry{id: f[0], addr: strings.SplitN(strings.SplitN(f[1], "@", 2)[0], ",", 2)[0], flags: f[2], primary: f[3]}
		e.configEpoch, _ = strconv.ParseInt(f[6], 10, 64)
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") { // a slot being migrated
				e.migrating = true
				continue
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("cluster nodes: bad slots %q", r)
			}
			e.slots = append(e.slots, [2]int{a, b})
		}
		out = append(out, e)
	}
	return out, nil
}

// slotOwners summarises who owns which slots, e.g. "0-5460:ab12..,...".
func slotOwners(view []clusterEntry) string {
	var parts []string
	for _, e := range view {
		for _, r := range e.slots {
			parts = append(parts, fmt.Sprintf("%d-%d:%s", r[0], r[1], e.id))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func clusterInfo(ctx context.Context, addr string) (map[string]string, error) {
	rdb := adminClient(addr)
	defer rdb.Close()
	return fields(rdb.ClusterInfo(ctx).Result())
}

// adminClient is a client straight to a process, bypassing its proxies.
func adminClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, PoolSize: 1})
}

// Slot returns the hash slot of key, honouring {hash tags} (see
// [lockcore.Slot]).
func Slot(key string) int { return lockcore.Slot(key) }

// SlotOwner returns the primary serving slot as the cluster sees it: of the
// answers of every reachable node (asked directly, past the proxies), the
// claim with the highest config epoch, which is the one the cluster
// converges on. It returns [ErrNoSuchNode] if no node claims the slot.
func (c *Cluster) SlotOwner(ctx context.Context, slot int) (*Node, error) {
	if c.topo.Shards == 0 {
		return nil, fmt.Errorf("%w: not a Redis Cluster", ErrBadTopology)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var (
		mu        sync.Mutex
		best      *Node
		bestEpoch int64 = -1
		errs      []error
		wg        sync.WaitGroup
	)
	for _, n := range c.Nodes {
		wg.Go(func() {
			view, err := clusterNodes(ctx, n.Proc.Addr())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
				return
			}
			for _, e := range view {
				// A failed primary still counts: until a replica takes over
				// with a higher epoch, it is the slot's owner of record.
				if !e.has("master") || e.configEpoch <= bestEpoch {
					continue
				}
				for _, r := range e.slots {
					if slot >= r[0] && slot <= r[1] {
						if o := c.nodeByPeer(e.addr); o != nil {
							best, bestEpoch = o, e.configEpoch
						}
					}
				}
			}
		})
	}
	wg.Wait()
	if best == nil {
		return nil, fmt.Errorf("%w: no node claims slot %d: %w", ErrNoSuchNode, slot, errors.Join(errs...))
	}
	return best, nil
}

// KeyOwner returns the primary serving key's slot (see [Cluster.SlotOwner]).
func (c *Cluster) KeyOwner(ctx context.Context, key string) (*Node, error) {
	return c.SlotOwner(ctx, Slot(key))
}

// ReplicasOf returns the nodes that replicate primary right now, each as
// it says itself (INFO replication, asked directly).
func (c *Cluster) ReplicasOf(ctx context.Context, primary *Node) []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n != primary && c.PrimaryOf(ctx, n) == primary {
			out = append(out, n)
		}
	}
	return out
}

// PrimaryOf returns the primary r replicates right now, by its own INFO
// replication (asked directly), or nil if r is a primary or does not answer.
func (c *Cluster) PrimaryOf(ctx context.Context, r *Node) *Node {
	m, err := Info(ctx, r.Proc.Addr(), "replication")
	if err != nil || m["role"] != "slave" {
		return nil
	}
	return c.nodeByPeer("127.0.0.1:" + m["master_port"])
}

// nodeByPeer returns the node announcing addr, or nil.
func (c *Cluster) nodeByPeer(addr string) *Node {
	for _, n := range c.Nodes {
		if n.Peer != nil && n.Peer.Addr() == addr {
			return n
		}
	}
	return nil
}

// Primaries returns how many of Nodes, from the first, started as
// primaries (or masters).
func (c *Cluster) Primaries() int { return c.topo.Masters }

// IsRedisCluster reports whether the topology is a Redis Cluster.
func (c *Cluster) IsRedisCluster() bool { return c.topo.Shards > 0 }

// ClientAddr returns the address a client dials for addr: the node's Link
// when addr is the Peer address a node announces (what CLUSTER SLOTS and
// MOVED redirects name), so redirected clients stay on the clients' path
// and its faults; any other addr unchanged.
func (c *Cluster) ClientAddr(addr string) string {
	if n := c.nodeByPeer(addr); n != nil {
		return n.Link.Addr()
	}
	return addr
}
