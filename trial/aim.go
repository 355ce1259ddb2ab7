package trial

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/scenario"
)

// aim resolves step i's target when it fires: it sets the node (or, for
// pause-client, the paused process) and returns the concrete target and a
// note saying how it was chosen. With no candidate in the state asked for
// (nobody holds the lock), it picks among all that could be, and says so.
func (m *nemesis) aim(ctx context.Context, i int, rng *rand.Rand) (target, how string, err error) {
	st := m.steps[i]
	c := m.env.c
	pick := func(list []string, fallback []string) (string, string) {
		if len(list) > 0 {
			return list[rng.IntN(len(list))], st.Node
		}
		if len(fallback) == 0 {
			return "", ""
		}
		return fallback[rng.IntN(len(fallback))], st.Node + ": none now, picked at random"
	}
	var all []string
	for _, n := range c.Nodes {
		all = append(all, n.Name)
	}
	switch st.Node {
	case scenario.AimMaster, scenario.AimReplica:
		master := m.currentMaster(ctx)
		if st.Node == scenario.AimMaster {
			target, how = master, st.Node
		} else {
			// A fault on the replication link needs a replica that has one:
			// a master demoted by the sentinels replicates without a proxy.
			cands := all
			if c.IsRedisCluster() {
				cands = nil
				if owner, err := c.Node(master); err == nil {
					for _, n := range c.ReplicasOf(ctx, owner) {
						cands = append(cands, n.Name)
					}
				}
			} else if st.Fault == "cut-replication" || st.Params["link"] == cluster.ReplicationLink {
				cands = nil
				for _, n := range c.Nodes {
					if n.ReplLink() != nil {
						cands = append(cands, n.Name)
					}
				}
			}
			target, how = pick(slices.DeleteFunc(slices.Clone(cands), func(n string) bool { return n == master }), cands)
		}
	case scenario.AimKeyHolder:
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
		target, how = pick(holding, all)
	case scenario.AimHolderResource, scenario.AimHolder:
		var clients, holders []string
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
		target, how = pick(holders, clients)
	}
	if target == "" {
		return "", "", fmt.Errorf("%w: no target for %s", scenario.ErrBadScenario, st.Node)
	}
	if scenario.ClientFault(st.Fault) {
		p, _ := scenario.ClientOf(target)
		m.faults[i] = scenario.ClientProcessFault(st.Fault, m.env.pids[p])
		return target, how, nil
	}
	m.nodes[i], err = c.Node(target)
	return target, how, err
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
