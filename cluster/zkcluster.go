package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// zkStartTimeout bounds one start of a ZooKeeper member's JVM (until it
// answers ruok); zkServeTimeout, per member, how long an ensemble may take
// to elect a leader and serve once every JVM is up. Both are liveness
// bounds, generous for a loaded machine: a 3-member ensemble serves in
// about 1.5 s at rest (docs/zookeeper.md).
const (
	zkStartTimeout = 60 * time.Second
	zkServeTimeout = 20 * time.Second
)

// startZooKeeper starts topo.ZooKeeper members z1..zN of one ensemble on
// backend, which must be a [ZooKeeperBackend], and waits until every one
// serves (a leader is elected and every follower has joined it). It is the
// whole of [Start] for a topology with ZooKeeper set.
func startZooKeeper(ctx context.Context, backend Backend, topo Topology) (_ *Cluster, err error) {
	zb, ok := backend.(ZooKeeperBackend)
	switch {
	case topo.Masters > 0 || topo.Replicas > 0 || topo.Shards > 0 || topo.Sentinels > 0 || topo.Etcd > 0 || topo.Postgres > 0:
		return nil, fmt.Errorf("%w: a ZooKeeper topology has no Redis nodes, etcd members or PostgreSQL nodes", ErrBadTopology)
	case topo.ZooKeeper != 1 && topo.ZooKeeper != 3 && topo.ZooKeeper != 5:
		return nil, fmt.Errorf("%w: %d ZooKeeper members (1, 3 or 5)", ErrBadTopology, topo.ZooKeeper)
	case topo.Persistence != "" && topo.Persistence != PersistNoFsync:
		return nil, fmt.Errorf("%w: ZooKeeper members take persistence no-fsync or none given, not %q", ErrBadTopology, topo.Persistence)
	case !ok:
		return nil, fmt.Errorf("%w: the %T backend runs no ZooKeeper members", ErrBadTopology, backend)
	}
	c := &Cluster{topo: topo, backend: backend, proxies: netlink.NewProxies()}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	for i := 1; i <= topo.ZooKeeper; i++ {
		n, err := c.newZooKeeperNode(ctx, zb, i)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.ZooKeeper = append(c.ZooKeeper, n)
		c.mu.Unlock()
	}
	// All members start at once: each waits for the others to elect.
	errs := make([]error, len(c.ZooKeeper))
	var wg sync.WaitGroup
	for i, n := range c.ZooKeeper {
		wg.Go(func() { errs[i] = n.Proc.Start(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := c.WaitZooKeeperServing(ctx, zkServeTimeout*time.Duration(topo.ZooKeeper)); err != nil {
		return nil, err
	}
	for _, n := range c.ZooKeeper { // a no-fsync disk's bootstrap, written back
		if err := n.Proc.(*zkMember).disk.Sync(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newZooKeeperNode asks zb where member i runs, reserves its three ports
// (client, quorum, election), makes its disk, puts a proxy in front of its
// client port and returns the node, not yet started.
func (c *Cluster) newZooKeeperNode(ctx context.Context, zb ZooKeeperBackend, i int) (*Node, error) {
	name := "z" + strconv.Itoa(i)
	pl, err := zb.ZooKeeperPlace(ctx, name)
	if err != nil {
		return nil, err
	}
	z := &zkMember{id: i, memberProc: memberProc{name: name, dir: pl.Dir, logPath: pl.LogPath, runner: pl.Runner,
		timeout: max(pl.StartTimeout, zkStartTimeout)}, clock: pl.Clock, shim: pl.ClockShim}
	kind := LazyIf(pl.LazyDisk)
	if c.topo.Persistence == PersistNoFsync {
		kind = NoFsyncDisk // acknowledges fsync without making anything durable
	}
	if z.disk, err = NewDisk(filepath.Join(pl.Dir, "data"), name, kind); err != nil {
		z.releasePort()
		return nil, err
	}
	if err := z.reserve(&z.clientPort, &z.quorumPort, &z.electionPort); err != nil {
		z.releasePort()
		return nil, err
	}
	n := &Node{Name: name, Proc: z, cluster: c}
	if n.Link, err = c.proxies.Add(name, z.Addr()); err != nil {
		z.releasePort()
		return nil, err
	}
	// Peers reach each other directly: a member tells the peer it dials
	// its own election address, and the peer connects back to it, past any
	// proxy (so lockpick offers no peer partition on ZooKeeper).
	c.zkServers = append(c.zkServers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i, z.quorumPort, z.electionPort))
	z.servers = func() []string { return c.zkServers }
	return n, nil
}

// ZooKeeperIndex returns i for a ZooKeeper member named "z<i>" of t, else 0.
func (t Topology) ZooKeeperIndex(node string) int { return memberIndex(node, "z", t.ZooKeeper) }

// memberIndex returns i for a node named prefix+"<i>", 1 <= i <= n, else 0.
func memberIndex(node, prefix string, n int) int {
	i, err := strconv.Atoi(strings.TrimPrefix(node, prefix))
	if err != nil || !strings.HasPrefix(node, prefix) || i < 1 || i > n {
		return 0
	}
	return i
}

// IsZooKeeperMember reports whether n is a ZooKeeper member.
func IsZooKeeperMember(n *Node) bool {
	_, ok := n.Proc.(*zkMember)
	return ok
}

// ZooKeeperAddrs returns the client addresses of the ZooKeeper members
// (their proxies, z1 first), for a client's server list.
func (c *Cluster) ZooKeeperAddrs() []string { return linkAddrs(c.ZooKeeper) }

// linkAddrs returns the addresses of the nodes' links, in order.
func linkAddrs(nodes []*Node) []string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Link.Addr()
	}
	return addrs
}

// ZooKeeperServing reports the mode of the ZooKeeper member n, asked on
// its own address within timeout ("leader", "follower", "standalone"), or
// an error when it is down or does not serve (it has no quorum).
func ZooKeeperServing(n *Node, timeout time.Duration) (string, error) {
	z, ok := n.Proc.(*zkMember)
	if !ok {
		return "", fmt.Errorf("cluster: %s is not a ZooKeeper member", n.Name)
	}
	return ZooKeeperMode(z.Addr(), timeout)
}

// WaitZooKeeperServing waits until every running member serves (it is the
// leader, a follower in sync with it, or a standalone server), for at
// most timeout. It returns an error wrapping [ErrNotReady] naming the
// members that did not, or ctx's error.
func (c *Cluster) WaitZooKeeperServing(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var sick []string
		for _, n := range c.ZooKeeper {
			if n.Proc.(PIDProc).PID() == 0 {
				continue
			}
			if _, err := ZooKeeperServing(n, 500*time.Millisecond); err != nil {
				sick = append(sick, n.Name)
			}
		}
		if len(sick) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: ZooKeeper members %s not serving after %v", ErrNotReady, strings.Join(sick, ","), timeout)
		}
		if err := SleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// ZooKeeperLeader returns the running member that says it leads (srvr's
// Mode: leader, or standalone for an ensemble of one), asking each on its
// own address. It returns an error wrapping [ErrNoLeader] if none does.
func (c *Cluster) ZooKeeperLeader() (*Node, error) {
	for _, n := range c.ZooKeeper {
		if n.Proc.(PIDProc).PID() == 0 {
			continue
		}
		if m, err := ZooKeeperServing(n, 500*time.Millisecond); err == nil && (m == "leader" || m == "standalone") {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%w among %d ZooKeeper members", ErrNoLeader, len(c.ZooKeeper))
}

// ZooKeeperRunning returns the members whose JVM is running, in name order.
func (c *Cluster) ZooKeeperRunning() []*Node {
	var run []*Node
	for _, n := range c.ZooKeeper {
		if n.Proc.(PIDProc).PID() != 0 {
			run = append(run, n)
		}
	}
	return run
}
