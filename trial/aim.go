package trial

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/scenario"
)

// aim resolves step i's target when it fires: it sets the node (or, for
// pause-client, the paused process) and returns the concrete target and a
// note saying how it was chosen. With no candidate in the state asked for
// (nobody holds the lock), it picks among all that could be, and says so.
func (m *nemesis) aim(ctx context.Context, i int, rng *rand.Rand) (target, how string, err error) {
	st := m.steps[i]
	target, how = m.choose(ctx, st, rng)
	if target == "" {
		return "", "", fmt.Errorf("%w: no target for %s", scenario.ErrBadScenario, st.Node)
	}
	if scenario.ClientFault(st.Fault) {
		p, _ := scenario.ClientOf(target)
		m.faults[i] = scenario.ClientProcessFault(st.Fault, m.env.pids[p])
		return target, how, nil
	}
	m.nodes[i], err = m.env.c.Node(target)
	return target, how, err
}

// choose resolves step st's aimed target in the system's state now,
// drawing from rng among the candidates: the target and how it was
// chosen, or "", "" when there is no candidate at all.
func (m *nemesis) choose(ctx context.Context, st scenario.Step, rng *rand.Rand) (target, how string) {
	pick := func(list []string, fallback []string) (string, string) {
		if len(list) > 0 {
			return list[rng.IntN(len(list))], st.Node
		}
		if len(fallback) == 0 {
			return "", ""
		}
		return fallback[rng.IntN(len(fallback))], st.Node + ": none now, picked at random"
	}
	switch st.Node {
	case scenario.AimMaster:
		return m.currentMaster(ctx), st.Node
	case scenario.AimReplica:
		master := m.currentMaster(ctx)
		cands := m.replicaCandidates(ctx, st, master)
		return pick(slices.DeleteFunc(slices.Clone(cands), func(n string) bool { return n == master }), cands)
	case scenario.AimKeyHolder:
		return pick(m.keyHolders(ctx), m.nodeNames())
	case scenario.AimHolderResource, scenario.AimHolder:
		return pick(m.holderTargets(st))
	case scenario.AimLeader:
		if l, err := m.env.c.EtcdLeader(ctx); err == nil {
			return l.Name, st.Node
		}
	case scenario.AimFollower:
		fs, how := m.etcdFollowers(ctx)
		t, _ := pick(fs, nil)
		return t, how
	}
	return "", ""
}

// etcdFollowers names the running etcd members other than the leader now,
// and how they were chosen: mid-election, when no member reports a leader,
// every running member is one (none leads).
func (m *nemesis) etcdFollowers(ctx context.Context) ([]string, string) {
	how := scenario.AimFollower
	fs, err := m.env.c.EtcdFollowers(ctx)
	if errors.Is(err, cluster.ErrNoLeader) {
		fs, how = m.env.c.EtcdRunning(), scenario.AimFollower+": no leader now, any running member"
	}
	names := make([]string, len(fs))
	for i, n := range fs {
		names[i] = n.Name
	}
	return names, how
}

// nodeNames lists the topology's nodes.
func (m *nemesis) nodeNames() []string {
	var all []string
	for _, n := range m.env.c.Nodes {
		all = append(all, n.Name)
	}
	return all
}

// replicaCandidates lists the nodes @replica may name for step st, the
// current master among them: in a Redis Cluster the replicas of the
// master serving the key, for a fault on the replication link the nodes
// that have one, else every node.
func (m *nemesis) replicaCandidates(ctx context.Context, st scenario.Step, master string) []string {
	c := m.env.c
	if c.IsRedisCluster() {
		var cands []string
		if owner, err := c.Node(master); err == nil {
			for _, n := range c.ReplicasOf(ctx, owner) {
				cands = append(cands, n.Name)
			}
		}
		return cands
	}
	if st.Fault == "cut-replication" || st.Params["link"] == faults.ReplicationLink {
		// A fault on the replication link needs a replica that has one:
		// a master demoted by the sentinels replicates without a proxy.
		var cands []string
		for _, n := range c.Nodes {
			if n.ReplLink() != nil {
				cands = append(cands, n.Name)
			}
		}
		return cands
	}
	return m.nodeNames()
}

// keyHolders lists the nodes on which the lock's key exists right now.
func (m *nemesis) keyHolders(ctx context.Context) []string {
	c := m.env.c
	held := make([]bool, len(c.Nodes))
	var wg sync.WaitGroup
	for j, n := range c.Nodes { // at once: a paused node costs its timeout only once
		wg.Go(func() { held[j] = keyOn(ctx, n, m.env.key) == evidence.KeyHeld })
	}
	wg.Wait()
	var holding []string
	for j, n := range c.Nodes {
		if held[j] {
			holding = append(holding, n.Name)
		}
	}
	return holding
}

// holderTargets lists, for @holder-resource or @holder in step st, the
// targets of the clients that hold the lock right now and those of every
// client it may name: resource paths r<p>, or isolated clients c<p>.
func (m *nemesis) holderTargets(st scenario.Step) (holders, clients []string) {
	held := checker.Holders(m.rec.History(), monoNow())
	for p := 1; p <= m.env.clients; p++ {
		if _, isolated := m.env.pids[p]; st.Node == scenario.AimHolder && !isolated {
			continue
		}
		name := fmt.Sprintf("r%d", p)
		if st.Node == scenario.AimHolder {
			name = fmt.Sprintf("c%d", p)
		}
		clients = append(clients, name)
		if slices.Contains(held, p) {
			holders = append(holders, name)
		}
	}
	return holders, clients
}

// currentMaster names the master clients would use now: the one the
// sentinels name, or the first node; in a Redis Cluster the primary serving
// the key's slot, or "" if no node answers.
func (m *nemesis) currentMaster(ctx context.Context) string {
	if m.env.c.IsRedisCluster() {
		// No fallback: n1 may serve other slots. "" makes the step fail.
		if owner, err := m.env.c.KeyOwner(ctx, m.env.key); err == nil {
			return owner.Name
		}
		return ""
	}
	if name, ok := sentinelsMaster(ctx, m.env.c); ok {
		return name
	}
	return m.env.c.Nodes[0].Name
}

// sentinelsMaster asks the sentinels, first answer wins, which node is master.
func sentinelsMaster(ctx context.Context, c *cluster.Cluster) (string, bool) {
	for _, s := range c.Sentinels {
		qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		addr, err := cluster.MasterAddr(qctx, s.Addr())
		cancel()
		if err == nil {
			return nodeNamed(c, addr), true
		}
	}
	return "", false
}

// nodeNamed returns the name of the node clients dial at addr, or addr.
func nodeNamed(c *cluster.Cluster, addr string) string {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n.Name
		}
	}
	return addr
}
