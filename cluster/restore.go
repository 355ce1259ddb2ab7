package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Restore puts the topology back the way [Start] left it, once every fault
// is healed, so that a fault schedule written for it can be played again
// (a soak plays one round after another on one cluster): the first master
// is the master again, each replica replicates it through its own
// replication proxy, the sentinels watch it with every replica and each
// other; in a Redis Cluster each node is again the primary or replica it
// started as, and each primary serves the slots it started with.
//
// It returns what it changed, "" when the topology was already as it
// started. Data is not restored: a master made master again keeps what it
// has, and its replicas resync from it. It does not heal faults: it fails
// when a node does not answer, when a proxy is still cut or has toxics
// (a heal that failed), or when the topology does not settle in time.
func (c *Cluster) Restore(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, n := range c.Nodes {
		if err := AdminDo(ctx, n.Proc.Addr(), "PING"); err != nil {
			return "", fmt.Errorf("cluster: restore: %s does not answer: %w", n.Name, err)
		}
	}
	var left []string
	for _, l := range c.proxies.All() {
		if f := l.Faulted(ctx); f != "" {
			left = append(left, l.Name()+" "+f)
		}
	}
	if len(left) > 0 {
		return "", fmt.Errorf("cluster: restore: faults left in place: %s", strings.Join(left, ", "))
	}
	if c.topo.Shards > 0 {
		return c.restoreRedisCluster(ctx)
	}
	if len(c.Nodes) == c.topo.Masters {
		return "", nil // independent masters: nothing moves
	}
	why := c.replicationDrift(ctx)
	if why == "" {
		return "", nil
	}
	// Sentinels forget the master first, so none of them fails it over
	// while the roles change under them.
	for _, s := range c.Sentinels {
		err := sentinelDo(ctx, s.Addr(), "SENTINEL", "REMOVE", MasterName)
		if err != nil && !strings.Contains(err.Error(), "No such master") {
			return "", fmt.Errorf("cluster: restore: %s: %w", s.Name, err)
		}
	}
	m := c.Nodes[0]
	if err := replicaOf(ctx, m.Proc.Addr(), "NO", "ONE"); err != nil {
		return "", fmt.Errorf("cluster: restore: %s: %w", m.Name, err)
	}
	for _, n := range c.Nodes[1:c.topo.Masters] { // other masters never replicate
		if err := replicaOf(ctx, n.Proc.Addr(), "NO", "ONE"); err != nil {
			return "", fmt.Errorf("cluster: restore: %s: %w", n.Name, err)
		}
	}
	m.mu.Lock()
	if m.demoted != nil { // a master again: no replication link of its own
		m.spare, m.demoted = m.demoted, nil
	}
	m.mu.Unlock()
	for _, r := range c.Nodes[c.topo.Masters:] {
		if err := r.Repl.SetUpstream(m.Proc.Addr()); err != nil {
			return "", err
		}
		host, p, _ := net.SplitHostPort(r.Repl.Addr())
		if err := replicaOf(ctx, r.Proc.Addr(), host, p); err != nil {
			return "", fmt.Errorf("cluster: restore: %s: %w", r.Name, err)
		}
	}
	for _, r := range c.Nodes[c.topo.Masters:] {
		if err := Poll(ctx, func() error { return ReplicaLinkUp(ctx, r.Addr()) }); err != nil {
			return "", fmt.Errorf("cluster: restore: %s never synced: %w", r.Name, err)
		}
	}
	quorum := strconv.Itoa(len(c.Sentinels)/2 + 1)
	for _, s := range c.Sentinels {
		host, p, _ := net.SplitHostPort(m.Addr())
		err := errors.Join(
			sentinelDo(ctx, s.Addr(), "SENTINEL", "MONITOR", MasterName, host, p, quorum),
			sentinelDo(ctx, s.Addr(), "SENTINEL", "SET", MasterName,
				"down-after-milliseconds", strconv.FormatInt(c.topo.DownAfter.Milliseconds(), 10),
				"failover-timeout", strconv.FormatInt(c.topo.FailoverTimeout.Milliseconds(), 10),
				"parallel-syncs", "1"))
		if err != nil {
			return "", fmt.Errorf("cluster: restore: %s: %w", s.Name, err)
		}
	}
	if err := c.waitSettled(ctx, 20*time.Second); err != nil {
		return "", fmt.Errorf("cluster: restore: %w", err)
	}
	return why, nil
}

// replicationDrift says how the master, its replicas and sentinels differ
// from the layout Start made, or "" if they do not.
func (c *Cluster) replicationDrift(ctx context.Context) string {
	m := c.Nodes[0]
	var drift []string
	for i, n := range c.Nodes {
		r, err := Info(ctx, n.Proc.Addr(), "replication")
		switch {
		case err != nil:
			drift = append(drift, n.Name+" does not answer")
		case i < c.topo.Masters && r["role"] != "master":
			drift = append(drift, n.Name+" is a "+r["role"])
		case i >= c.topo.Masters && (r["role"] != "slave" || r["master_port"] != port(n.Repl.Addr()) ||
			r["master_link_status"] != "up" || n.Repl.Upstream() != m.Proc.Addr()):
			drift = append(drift, n.Name+" does not replicate "+m.Name+" through its replication proxy")
		}
	}
	for _, s := range c.Sentinels {
		// What waitSettled waits for, read once.
		v, err := sentinelMaster(ctx, s.Addr())
		if err == nil && v["ip"]+":"+v["port"] != m.Addr() {
			err = errors.New("does not name " + m.Name + " master")
		}
		if err == nil {
			err = c.sentinelSettled(v)
		}
		if err != nil {
			drift = append(drift, s.Name+": "+err.Error())
		}
	}
	if len(drift) == 0 {
		return ""
	}
	return strings.Join(drift, ", ")
}

// restoreRedisCluster makes each node the primary or replica it started as
// and moves every slot back to the primary it started on. Gossip can undo a
// step taken on a stale view, so it tries up to three times.
func (c *Cluster) restoreRedisCluster(ctx context.Context) (string, error) {
	var did []string
	for attempt := 1; ; attempt++ {
		steps, err := c.restoreClusterOnce(ctx)
		did = append(did, steps...)
		if err == nil && len(did) > 0 {
			wait, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = c.waitClusterSettled(wait)
			cancel()
		}
		if err == nil {
			if drift := c.clusterDrift(ctx); drift != "" {
				err = errors.New(drift)
			}
		}
		if err == nil {
			return strings.Join(did, ", "), nil // "" if nothing was needed
		}
		if attempt == 3 || ctx.Err() != nil {
			return "", fmt.Errorf("cluster: restore: %w", err)
		}
	}
}

// restoreClusterOnce takes one pass of restoreRedisCluster's steps and
// returns the ones it took.
func (c *Cluster) restoreClusterOnce(ctx context.Context) ([]string, error) {
	var did []string
	shards := c.topo.Shards
	for _, n := range c.Nodes[:shards] {
		role, err := NodeRole(ctx, n.Proc.Addr())
		if err != nil {
			return did, fmt.Errorf("%s: %w", n.Name, err)
		}
		if role == "master" {
			continue
		}
		if err := ClusterFailover(ctx, n, "", 10*time.Second); err != nil {
			return did, err
		}
		did = append(did, n.Name+" primary again")
	}
	for j, r := range c.Nodes[shards:] {
		p := c.Nodes[j%shards]
		// A failover turns the old primary into a replica by gossip: give
		// it a moment before telling it.
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := Poll(wait, func() error {
			if c.PrimaryOf(wait, r) != p {
				return errors.New("not yet")
			}
			return nil
		})
		cancel()
		if err == nil {
			continue
		}
		wait, cancel = context.WithTimeout(ctx, 5*time.Second)
		err = Poll(wait, func() error { return AdminDo(wait, r.Proc.Addr(), "CLUSTER", "REPLICATE", p.ID()) })
		cancel()
		if err != nil {
			return did, fmt.Errorf("%s replicate %s: %w", r.Name, p.Name, err)
		}
		did = append(did, r.Name+" replicates "+p.Name+" again")
	}
	misplaced, err := c.misplacedSlots(ctx)
	if err != nil {
		return did, err
	}
	for _, m := range misplaced {
		if _, err := MigrateSlot(ctx, m.owner, m.home, m.slot, 0); err != nil {
			return did, err
		}
		did = append(did, fmt.Sprintf("slot %d back on %s", m.slot, m.home.Name))
	}
	return did, nil
}

// A misplacedSlot is served by owner but started on home.
type misplacedSlot struct {
	slot        int
	owner, home *Node
}

// misplacedSlots lists the slots served elsewhere than where they started,
// as the first primary sees it.
func (c *Cluster) misplacedSlots(ctx context.Context) ([]misplacedSlot, error) {
	view, err := clusterNodes(ctx, c.Nodes[0].Proc.Addr())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Nodes[0].Name, err)
	}
	var out []misplacedSlot
	shards := c.topo.Shards
	for i, home := range c.Nodes[:shards] {
		lo, hi := SlotRange(i, shards)
		for _, e := range view {
			owner := c.nodeByPeer(e.addr)
			if e.id == home.ID() || !e.has("master") || owner == nil {
				continue
			}
			for _, r := range e.slots {
				for slot := max(lo, r[0]); slot <= min(hi, r[1]); slot++ {
					out = append(out, misplacedSlot{slot, owner, home})
				}
			}
		}
	}
	return out, nil
}

// clusterDrift says how the Redis Cluster differs from the layout Start
// made, or "" if it does not.
func (c *Cluster) clusterDrift(ctx context.Context) string {
	var drift []string
	shards := c.topo.Shards
	for i, n := range c.Nodes {
		if i < shards {
			if role, err := NodeRole(ctx, n.Proc.Addr()); err != nil || role != "master" {
				drift = append(drift, n.Name+" is not a primary")
			}
		} else if p := c.Nodes[(i-shards)%shards]; c.PrimaryOf(ctx, n) != p {
			drift = append(drift, n.Name+" does not replicate "+p.Name)
		}
	}
	switch m, err := c.misplacedSlots(ctx); {
	case err != nil:
		drift = append(drift, err.Error())
	case len(m) > 0:
		drift = append(drift, fmt.Sprintf("%d slots off their start primary", len(m)))
	}
	for _, n := range c.Nodes {
		if view, err := clusterNodes(ctx, n.Proc.Addr()); err != nil {
			drift = append(drift, n.Name+": "+err.Error())
		} else if slices.ContainsFunc(view, func(e clusterEntry) bool { return e.migrating }) {
			drift = append(drift, n.Name+" has a slot half-migrated")
		}
	}
	return strings.Join(drift, ", ")
}

// sentinelDo sends one command to the sentinel at addr.
func sentinelDo(ctx context.Context, addr string, args ...any) error {
	s := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer s.Close()
	return s.Process(ctx, redis.NewCmd(ctx, args...))
}
