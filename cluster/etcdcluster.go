package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// Timings of an etcd topology: etcd's defaults are 100ms and 1000ms too;
// they are written out because the lease minimum follows from them (etcd
// grants no lease shorter than 1.5 election timeouts, rounded up to the
// second: 2s here), and faults are timed against them.
const (
	etcdDefaultHeartbeat = 100 * time.Millisecond
	etcdDefaultElection  = 1000 * time.Millisecond
	etcdMaxMembers       = 7
)

// startEtcd starts topo.Etcd etcd members e1..eN on backend, which must be
// an [EtcdBackend], and waits until every member is healthy. It is the
// whole of [Start] for a topology with Etcd set.
func startEtcd(ctx context.Context, backend Backend, topo Topology) (_ *Cluster, err error) {
	eb, ok := backend.(EtcdBackend)
	switch {
	case topo.Masters > 0 || topo.Replicas > 0 || topo.Shards > 0 || topo.Sentinels > 0:
		return nil, fmt.Errorf("%w: an etcd topology has no Redis nodes", ErrBadTopology)
	case topo.Persistence != "" && topo.Persistence != PersistNoFsync:
		return nil, fmt.Errorf("%w: etcd members take persistence no-fsync or none given, not %q", ErrBadTopology, topo.Persistence)
	case topo.Etcd > etcdMaxMembers:
		return nil, fmt.Errorf("%w: %d etcd members (at most %d)", ErrBadTopology, topo.Etcd, etcdMaxMembers)
	case !ok:
		return nil, fmt.Errorf("%w: the %T backend runs no etcd members", ErrBadTopology, backend)
	}
	if topo.EtcdHeartbeat <= 0 {
		topo.EtcdHeartbeat = etcdDefaultHeartbeat
	}
	if topo.EtcdElection <= 0 {
		topo.EtcdElection = etcdDefaultElection
	}
	c := &Cluster{topo: topo, backend: backend, proxies: netlink.NewProxies()}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	cfg := &etcdClusterConfig{token: "lockpick-" + RandomID()[:12], heartbeat: topo.EtcdHeartbeat, election: topo.EtcdElection}
	var initial []string
	for i := 1; i <= topo.Etcd; i++ {
		n, err := c.newEtcdNode(ctx, eb, "e"+strconv.Itoa(i), cfg)
		if err != nil {
			return nil, err
		}
		c.mu.Lock() // the peer filters read the members (etcdDialer)
		c.Etcd = append(c.Etcd, n)
		c.mu.Unlock()
		initial = append(initial, n.Name+"="+n.Proc.(*etcdMember).peerURL)
	}
	cfg.initial = strings.Join(initial, ",")
	// All members start at once: each waits for the others before the
	// first election.
	errs := make([]error, len(c.Etcd))
	var wg sync.WaitGroup
	for i, n := range c.Etcd {
		wg.Go(func() { errs[i] = n.Proc.Start(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := c.WaitEtcdHealthy(ctx, c.Etcd[0].Proc.(*etcdMember).timeout+topo.EtcdElection*3); err != nil {
		return nil, err
	}
	for _, n := range c.Etcd { // a no-fsync disk's bootstrap, written back
		if err := n.Proc.(*etcdMember).disk.Sync(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newEtcdNode reserves a member's two ports, puts a proxy in front of each
// and returns the node, not yet started.
func (c *Cluster) newEtcdNode(ctx context.Context, eb EtcdBackend, name string, cfg *etcdClusterConfig) (*Node, error) {
	pl, err := eb.EtcdPlace(ctx, name)
	if err != nil {
		return nil, err
	}
	m := &etcdMember{memberProc: memberProc{name: name, dir: pl.Dir, logPath: pl.LogPath, runner: pl.Runner, timeout: pl.StartTimeout}, cfg: cfg}
	kind := LazyIf(pl.LazyDisk)
	if c.topo.Persistence == PersistNoFsync {
		kind = NoFsyncDisk
	}
	if m.disk, err = NewDisk(filepath.Join(pl.Dir, "data"), name, kind); err != nil {
		m.releasePort()
		return nil, err
	}
	if err := m.reserve(&m.clientPort, &m.peerPort); err != nil {
		m.releasePort()
		return nil, err
	}
	n := &Node{Name: name, Proc: m, cluster: c}
	if n.Link, err = c.proxies.Add(name, m.Addr()); err != nil {
		m.releasePort()
		return nil, err
	}
	if n.Peer, err = c.proxies.Add(name+"-peer", m.peerAddr()); err != nil {
		m.releasePort()
		return nil, err
	}
	f, err := netlink.NewPeerFilter(name, n.Peer.Addr(), c.etcdDialer,
		func(sender string) bool { return c.EtcdCut(sender, name) })
	if err != nil {
		m.releasePort()
		return nil, err
	}
	c.peerFilters = append(c.peerFilters, f)
	m.clientURL, m.peerURL = "http://"+n.Link.Addr(), "http://"+f.Addr()
	m.replace = func(ctx context.Context) error { return c.replaceEtcdMember(ctx, n) }
	return n, nil
}

// EtcdEndpoints returns the client addresses of the etcd members (host:port
// of their proxies, e1 first), for an etcd client's Endpoints.
func (c *Cluster) EtcdEndpoints() []string { return linkAddrs(c.Etcd) }

// EtcdNodeByEndpoint returns the member whose client proxy (or own client
// address) is addr, with or without an http:// prefix, or nil.
func (c *Cluster) EtcdNodeByEndpoint(addr string) *Node {
	addr = strings.TrimPrefix(addr, "http://")
	for _, n := range c.Etcd {
		if n.Link.Addr() == addr || n.Proc.Addr() == addr {
			return n
		}
	}
	return nil
}

// WaitEtcdHealthy waits until every running member answers /health with
// true (it knows a leader and a read through the cluster succeeded), for at
// most timeout. It returns an error wrapping [ErrNotReady] naming the
// members that were not, or ctx's error.
func (c *Cluster) WaitEtcdHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var sick []string
		for _, n := range c.Etcd {
			if n.Proc.(PIDProc).PID() != 0 && !etcdHealthy(ctx, n.Proc.Addr()) {
				sick = append(sick, n.Name)
			}
		}
		if len(sick) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: etcd members %s not healthy after %v", ErrNotReady, strings.Join(sick, ","), timeout)
		}
		if err := SleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// ErrNoLeader means no etcd member (or ZooKeeper member) reported itself leader.
var ErrNoLeader = errors.New("cluster: no leader")

// EtcdLeader returns the member that reports itself leader (its status
// names itself), asking every running member on its own address; if two
// do (an old leader cut off has not yet stepped down), the one of the
// higher raft term. It returns an error wrapping [ErrNoLeader] if none does.
// Of a ZooKeeper ensemble, it is [Cluster.ZooKeeperLeader].
func (c *Cluster) EtcdLeader(ctx context.Context) (*Node, error) {
	if len(c.ZooKeeper) > 0 {
		return c.ZooKeeperLeader()
	}
	var (
		best *Node
		term uint64
	)
	for n, st := range c.etcdStatuses(ctx) {
		t, _ := strconv.ParseUint(st.Header.RaftTerm, 10, 64)
		if st.Leader != "" && st.Leader == st.Header.MemberID && (best == nil || t > term) {
			best, term = n, t
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w among %d members", ErrNoLeader, len(c.Etcd))
	}
	return best, nil
}

// EtcdFollowers returns the running members other than the leader, as
// [Cluster.EtcdLeader] finds it, in name order. It returns the error of
// EtcdLeader.
func (c *Cluster) EtcdFollowers(ctx context.Context) ([]*Node, error) {
	leader, err := c.EtcdLeader(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(c.EtcdRunning(), func(n *Node) bool { return n == leader }), nil
}

// EtcdRunning returns the members whose process is running, in name order
// (of a ZooKeeper ensemble: [Cluster.ZooKeeperRunning]).
func (c *Cluster) EtcdRunning() []*Node {
	if len(c.ZooKeeper) > 0 {
		return c.ZooKeeperRunning()
	}
	var run []*Node
	for _, n := range c.Etcd {
		if n.Proc.(PIDProc).PID() != 0 {
			run = append(run, n)
		}
	}
	return run
}

// EtcdNodeByID returns the running member whose etcd member id is id (as
// in a reply header's member_id), asking every running member, or nil. A
// replaced member (see [Cluster.replaceEtcdMember]) has a new id.
func (c *Cluster) EtcdNodeByID(ctx context.Context, id uint64) *Node {
	want := strconv.FormatUint(id, 10)
	for n, st := range c.etcdStatuses(ctx) {
		if st.Header.MemberID == want {
			return n
		}
	}
	return nil
}

// etcdStatuses asks every running member for its status at once; members
// that do not answer in time are left out.
func (c *Cluster) etcdStatuses(ctx context.Context) map[*Node]etcdStatus {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = map[*Node]etcdStatus{}
	)
	for _, n := range c.Etcd {
		if n.Proc.(PIDProc).PID() == 0 {
			continue
		}
		wg.Go(func() {
			if st, err := etcdStatusOf(ctx, n.Proc.Addr()); err == nil {
				mu.Lock()
				out[n] = st
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// replaceEtcdMember makes n, whose data directory is gone, a new member of
// the cluster under the same name and peer URL, as etcd's runtime
// reconfiguration guide says to replace a failed member: remove it from
// the membership, add it again (it gets a new member id), and start it
// with an empty data directory and --initial-cluster-state existing, so it
// receives the state from the leader. Restarting it under its old identity
// with no data would break Raft's assumption that a member keeps its term
// and vote, which etcd does not guard against; lockpick does not do that.
// It needs a quorum of the other members, and asks the first running one.
func (c *Cluster) replaceEtcdMember(ctx context.Context, n *Node) error {
	peerURL := n.Proc.(*etcdMember).peerURL
	var lastErr error = fmt.Errorf("no other etcd member is running")
	for _, o := range c.Etcd {
		if o == n || o.Proc.(PIDProc).PID() == 0 {
			continue
		}
		if lastErr = replaceVia(ctx, o.Proc.Addr(), n.Name, peerURL); lastErr == nil {
			return nil
		}
	}
	return lastErr
}

// replaceVia removes the member named name (or with peerURL) and adds
// peerURL again, asking the member at addr. A member already added again
// (it has the peer URL but no name: never started) is left as it is.
func replaceVia(ctx context.Context, addr, name, peerURL string) error {
	ms, err := etcdMembers(ctx, addr)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(7 * time.Second)
	for _, m := range ms {
		if m.Name != name && !slices.Contains(m.PeerURLs, peerURL) {
			continue
		}
		if m.Name == "" {
			return nil
		}
		if err := whileUnhealthy(ctx, deadline, func() error { return etcdRemoveMember(ctx, addr, m.ID) }); err != nil {
			return err
		}
	}
	return whileUnhealthy(ctx, deadline, func() error { return etcdAddMember(ctx, addr, peerURL) })
}

// whileUnhealthy runs the membership change fn until etcd stops refusing
// it with "unhealthy cluster", or deadline passes. etcd refuses to add a
// voting member until every member has been connected for 5s (its
// HealthInterval), as after a start or a partition; and to remove one it
// still counts as connected (a member killed a moment ago) while fewer than
// a quorum of the others have been connected that long (one restarted
// within 5s).
func whileUnhealthy(ctx context.Context, deadline time.Time, fn func() error) error {
	for {
		err := fn()
		var ae *etcdAPIError
		if !errors.As(err, &ae) || ae.Message != errEtcdUnhealthy || time.Now().After(deadline) {
			return err
		}
		if err := SleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
