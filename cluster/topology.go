package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// MasterName is the name sentinels monitor the first master under.
const MasterName = "lockpick"

// A Topology describes the nodes of a [Cluster].
type Topology struct {
	// Masters is the number of independent masters (Redlock uses 5). default: 1.
	Masters int
	// Replicas is the number of replicas of the first master, or with
	// Shards of every primary. default: 0.
	Replicas int
	// Shards, when above 0, makes the nodes one Redis Cluster of Shards
	// primaries n1..nShards, each with Replicas replicas (the replica of
	// primary i is n<Shards+i>, then n<2*Shards+i>, ...). Masters and
	// Sentinels must then be 0.
	Shards int
	// NodeTimeout is a Redis Cluster's cluster-node-timeout. default: 500ms.
	NodeTimeout time.Duration
	// Sentinels is the number of sentinels watching the first master. default: 0.
	Sentinels int
	// Config holds extra redis-server configuration lines for every node.
	Config []string
	// DownAfter is the sentinels' down-after-milliseconds. default: 500ms.
	DownAfter time.Duration
	// FailoverTimeout is the sentinels' failover-timeout. default: 3s.
	FailoverTimeout time.Duration
	// Persistence is every redis-server node's persistence. default: PersistNone.
	Persistence Persistence
	// NodePersistence overrides Persistence for nodes by name, e.g.
	// {"n3": PersistAOFAlways}.
	NodePersistence map[string]Persistence
	// NodeConfig holds extra configuration lines for nodes by name, applied
	// after Config and persistence.
	NodeConfig map[string][]string
	// Etcd, when above 0, makes the topology Etcd etcd members e1..eN
	// instead of Redis nodes (see etcdcluster.go), on a backend that is an
	// [EtcdBackend] (both are).
	// Masters, Replicas, Shards and Sentinels must then be 0.
	Etcd int
	// EtcdHeartbeat is the members' --heartbeat-interval. default: 100ms.
	EtcdHeartbeat time.Duration
	// EtcdElection is the members' --election-timeout. default: 1000ms.
	EtcdElection time.Duration
	// Postgres, when above 0, makes the topology PostgreSQL nodes instead
	// of Redis nodes (see pgcluster.go): 1 is a primary p1, 2 adds p2, a
	// hot standby streaming from it. Process backend only.
	Postgres int
	// ZooKeeper, when above 0, makes the topology an ensemble of ZooKeeper
	// members z1..zN (1, 3 or 5) instead of Redis nodes (see zkcluster.go).
	// Process backend only.
	ZooKeeper int

	_ struct{} // disallow positional literals, for extensibility
}

// WithDefaults returns t with its zero fields set to their defaults, as
// [Start] runs it.
func (t Topology) WithDefaults() Topology { return t.withDefaults() }

func (t Topology) withDefaults() Topology {
	if t.Masters <= 0 {
		t.Masters = 1
	}
	if t.Shards > 0 {
		t.Masters = t.Shards // the primaries come first, as masters do
	}
	if t.DownAfter <= 0 {
		t.DownAfter = 500 * time.Millisecond
	}
	if t.FailoverTimeout <= 0 {
		t.FailoverTimeout = 3 * time.Second
	}
	if t.NodeTimeout <= 0 {
		t.NodeTimeout = 500 * time.Millisecond
	}
	return t
}

// A Node is one Redis process and the proxies in front of it, or a service
// added with [Cluster.AddProxy] (Proc nil).
type Node struct {
	// Name is "n1".."nN" for redis-server nodes, "s1".. for sentinels, and
	// the caller's name for services.
	Name string
	// Proc is the process itself; nil for a service.
	Proc Proc
	// Link is the proxy clients (and sentinels) reach the node through.
	Link *netlink.Link
	// Repl is the proxy a replica replicates from its master through; nil
	// on nodes started as masters. It is set by [Start] and never changes:
	// [Node.ReplLink] also returns the proxy of a master a faults.PromoteFault
	// demoted.
	Repl *netlink.Link

	cluster *Cluster
	mu      sync.Mutex
	demoted *netlink.Link // the replication proxy demote made for a master; guarded by mu
	spare   *netlink.Link // that proxy once Restore made the node a master again; guarded by mu

	// Of an etcd member (see etcd.go), Peer is the proxy of its peer port,
	// the address it announces to the other members.
	//
	// In a Redis Cluster (see rediscluster.go): Peer is the proxy whose
	// address the node announces (replicas replicate through it, redirects
	// name it), Bus the proxy of its cluster bus, Shard the primary it
	// started under (1..Shards). All are zero outside a Redis Cluster.
	Peer  *netlink.Link
	Bus   *netlink.Link
	Shard int
	id    string // the node's cluster id; guarded by mu
}

// ID returns the node's Redis Cluster node id, "" outside a Redis Cluster.
func (n *Node) ID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}

func (n *Node) setID(id string) {
	n.mu.Lock()
	n.id = id
	n.mu.Unlock()
}

// ReplLink returns the proxy the node replicates from its master through:
// Repl for a node started as a replica, the proxy a faults.PromoteFault made
// when it demoted a node started as a master, in a Redis Cluster the Peer
// of the primary it replicates now (asked with INFO), or nil.
func (n *Node) ReplLink() *netlink.Link {
	if n.Repl != nil {
		return n.Repl
	}
	if c := n.cluster; c != nil && c.topo.Shards > 0 {
		// A cluster replica replicates through its current primary's Peer.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if p := c.PrimaryOf(ctx, n); p != nil {
			return p.Peer
		}
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.demoted
}

// Addr returns the address clients dial: the node's proxy, or the process
// itself for a node without one (sentinels).
func (n *Node) Addr() string {
	if n.Link == nil {
		return n.Proc.Addr()
	}
	return n.Link.Addr()
}

// Cluster returns the cluster the node belongs to, or nil for a Node built
// by hand.
func (n *Node) Cluster() *Cluster { return n.cluster }

// A Cluster is a running topology. Close it to stop every process and proxy.
type Cluster struct {
	// Nodes lists the redis-server nodes: masters first, then replicas.
	Nodes []*Node
	// Sentinels lists the sentinels; they are not proxied (Link is nil).
	Sentinels []*Node
	// Services lists the proxies added with [Cluster.AddProxy].
	Services []*Node
	// Etcd lists the etcd members of an etcd topology (see etcdcluster.go).
	Etcd []*Node
	// Postgres lists the PostgreSQL nodes of a Postgres topology, p1 first
	// (see pgcluster.go).
	Postgres []*Node
	// ZooKeeper lists the members of a ZooKeeper ensemble, z1 first (see
	// zkcluster.go).
	ZooKeeper []*Node

	topo         Topology
	backend      Backend
	proxies      *netlink.Proxies
	mu           sync.Mutex // guards Services, busSides and etcdSides
	reservations []*netlink.PortReservation
	filters      []*netlink.BusFilter // of a Redis Cluster's buses
	busSides     map[string]int       // node id -> side of a bus partition; nil without one

	peerFilters []*netlink.PeerFilter // of the etcd members (see etcdsides.go)
	etcdSides   map[string]int        // etcd member -> side of a partition; nil without one; guarded by mu
	zkServers   []string              // the ZooKeeper members' server.N lines (see zkcluster.go)
}

// Start launches topo on backend and waits until replicas are in sync and
// every sentinel knows the master, its replicas and the other sentinels.
// On failure everything started so far is stopped. A node that fails to
// start returns a *[StartError] naming its log; a bad persistence mode
// returns [ErrBadTopology].
func Start(ctx context.Context, backend Backend, topo Topology) (_ *Cluster, err error) {
	if topo.Etcd > 0 {
		return startEtcd(ctx, backend, topo)
	}
	if topo.Postgres > 0 {
		return startPostgres(ctx, backend, topo)
	}
	if topo.ZooKeeper > 0 {
		return startZooKeeper(ctx, backend, topo)
	}
	if topo.Shards > 0 && (topo.Masters > 1 || topo.Sentinels > 0) {
		return nil, fmt.Errorf("%w: a Redis Cluster (shards) has no independent masters or sentinels", ErrBadTopology)
	}
	topo = topo.withDefaults()
	c := &Cluster{topo: topo, backend: backend, proxies: netlink.NewProxies()}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	if topo.Shards > 0 {
		if err = c.startRedisCluster(ctx); err != nil {
			return nil, err
		}
		return c, nil
	}
	total := topo.Masters + topo.Replicas
	for i := 1; i <= total; i++ {
		n := &Node{Name: "n" + strconv.Itoa(i), cluster: c}
		if n.Link, err = c.proxies.Add(n.Name, "127.0.0.1:1"); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	for i, n := range c.Nodes {
		// A replica must sync at once, not after the default 5s diskless delay.
		cfg := append([]string{"repl-diskless-sync-delay 0"}, topo.Config...)
		p := topo.Persistence
		if np, ok := topo.NodePersistence[n.Name]; ok {
			p = np
		}
		pcfg, err := p.Config()
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, pcfg...)
		cfg = append(cfg, topo.NodeConfig[n.Name]...)
		if i >= topo.Masters {
			master := c.Nodes[0]
			if n.Repl, err = c.proxies.Add(n.Name+"-repl", master.Proc.Addr()); err != nil {
				return nil, err
			}
			cfg = append(cfg,
				"replicaof "+hostPort(n.Repl.Addr()),
				"replica-announce-ip 127.0.0.1",
				"replica-announce-port "+port(n.Addr()),
			)
		}
		if n.Proc, err = backend.Launch(ctx, ProcSpec{Name: n.Name, Config: cfg}); err != nil {
			return nil, err
		}
		if err = n.Link.SetUpstream(n.Proc.Addr()); err != nil {
			return nil, err
		}
	}
	if err = c.startSentinels(ctx); err != nil {
		return nil, err
	}
	if err = c.waitSettled(ctx, 10*time.Second); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) startSentinels(ctx context.Context) error {
	type sentinel struct {
		port int
		id   string
	}
	// Sentinels are told each other's ports in advance, so the ports are
	// reserved first and held until Close.
	ss := make([]sentinel, c.topo.Sentinels)
	for i := range ss {
		r, err := netlink.ReservePort()
		if err != nil {
			return err
		}
		c.reservations = append(c.reservations, r)
		ss[i] = sentinel{port: r.Port(), id: RandomID()}
	}
	for i, s := range ss {
		m := MasterName
		cfg := []string{
			"sentinel monitor " + m + " " + hostPort(c.Nodes[0].Addr()) + " " + strconv.Itoa(len(ss)/2+1),
			"sentinel down-after-milliseconds " + m + " " + strconv.FormatInt(c.topo.DownAfter.Milliseconds(), 10),
			"sentinel failover-timeout " + m + " " + strconv.FormatInt(c.topo.FailoverTimeout.Milliseconds(), 10),
			"sentinel parallel-syncs " + m + " 1",
			"sentinel announce-ip 127.0.0.1",
			"sentinel myid " + s.id,
		}
		for _, r := range c.Nodes[c.topo.Masters:] {
			cfg = append(cfg, "sentinel known-replica "+m+" "+hostPort(r.Addr()))
		}
		for j, o := range ss {
			if j != i {
				cfg = append(cfg, fmt.Sprintf("sentinel known-sentinel %s 127.0.0.1 %d %s", m, o.port, o.id))
			}
		}
		name := "s" + strconv.Itoa(i+1)
		proc, err := c.backend.Launch(ctx, ProcSpec{Name: name, Sentinel: true, Port: s.port, Config: cfg})
		if err != nil {
			return err
		}
		c.Sentinels = append(c.Sentinels, &Node{Name: name, Proc: proc, cluster: c})
	}
	return nil
}

// AddProxy puts a proxy named name in front of upstream, a TCP service of
// the caller's (the runner's protected resource), and returns it as a Node
// without a process: network faults apply to it like to any node, process
// faults return [ErrNoProcess]. Clients dial the returned Node's Addr. It
// returns an error if the name is taken.
func (c *Cluster) AddProxy(name, upstream string) (*Node, error) {
	if _, err := c.Node(name); err == nil {
		return nil, fmt.Errorf("cluster: add proxy: name %q is taken", name)
	}
	l, err := c.proxies.Add(name, upstream)
	if err != nil {
		return nil, err
	}
	n := &Node{Name: name, Link: l, cluster: c}
	c.mu.Lock()
	c.Services = append(c.Services, n)
	c.mu.Unlock()
	return n, nil
}

// all returns every node, sentinel and service.
func (c *Cluster) all() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(append(append(append(append(append([]*Node{}, c.Nodes...), c.Sentinels...), c.Services...), c.Etcd...), c.Postgres...), c.ZooKeeper...)
}

// Unshared reports whether nothing but the clients talks to n: a Redis
// master outside a Redis Cluster that no replica follows and no sentinel
// watches (both are of the first master).
func (c *Cluster) Unshared(n *Node) bool {
	if !slices.Contains(c.Nodes, n) || n.Repl != nil || n.Shard != 0 {
		return false
	}
	if n != c.Nodes[0] {
		return true
	}
	if len(c.Sentinels) > 0 {
		return false
	}
	for _, o := range c.Nodes {
		if o.Repl != nil {
			return false
		}
	}
	return true
}

// Node returns the redis-server node, sentinel or service with the given
// name, or [ErrNoSuchNode].
func (c *Cluster) Node(name string) (*Node, error) {
	for _, n := range c.all() {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoSuchNode, name)
}

// NodeByAddr returns the node whose proxy or process listens on addr, or nil.
func (c *Cluster) NodeByAddr(addr string) *Node {
	for _, n := range c.Nodes {
		if n.Addr() == addr || n.Proc.Addr() == addr {
			return n
		}
	}
	return nil
}

// SentinelAddrs returns the sentinels' addresses.
func (c *Cluster) SentinelAddrs() []string {
	addrs := make([]string, len(c.Sentinels))
	for i, s := range c.Sentinels {
		addrs[i] = s.Proc.Addr()
	}
	return addrs
}

// LogPaths returns every process's log file by node name.
func (c *Cluster) LogPaths() map[string]string {
	m := map[string]string{}
	for _, n := range c.all() {
		if n.Proc != nil {
			m[n.Name] = n.Proc.LogPath()
		}
	}
	return m
}

// Close stops every proxy and process of the cluster. It is idempotent.
func (c *Cluster) Close() error {
	c.proxies.Close()
	for _, f := range c.filters {
		f.Close()
	}
	for _, f := range c.peerFilters {
		f.Close()
	}
	var errs []error
	// A replica goes before its primary, which it would otherwise reconnect to.
	for _, n := range append(append(append(append(append([]*Node{}, c.Sentinels...), c.Nodes...), c.Etcd...), reversed(c.Postgres)...), c.ZooKeeper...) {
		if n.Proc != nil {
			errs = append(errs, n.Proc.Kill())
			if r, ok := n.Proc.(interface{ releasePort() }); ok {
				r.releasePort()
			}
		}
	}
	for _, r := range c.reservations {
		r.Release()
	}
	for _, n := range c.Etcd {
		// etcd preallocates a 64 MB WAL per member: kept in every trial
		// folder, 40 trials of a compare filled 15 GB. The logs stay.
		if m, ok := n.Proc.(*etcdMember); ok {
			errs = append(errs, m.disk.Remove())
		}
	}
	for _, n := range c.Postgres { // about 40 MB each; the logs stay
		if p, ok := n.Proc.(*pgNode); ok && p.disk != nil {
			errs = append(errs, p.disk.Remove())
		}
	}
	for _, n := range c.ZooKeeper { // the logs stay
		if z, ok := n.Proc.(*zkMember); ok && z.disk != nil {
			errs = append(errs, z.disk.Remove())
		}
	}
	return errors.Join(errs...)
}

// RandomID returns 40 random hex digits, the form of a Redis run or node ID.
func RandomID() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// hostPort turns "127.0.0.1:6379" into "127.0.0.1 6379", as Redis configs want.
func hostPort(addr string) string { return strings.Replace(addr, ":", " ", 1) }

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// NodeCount returns how many Redis nodes t has, n1..nN.
func (t Topology) NodeCount() int {
	if t.Shards > 0 {
		return t.Shards * (1 + t.Replicas)
	}
	return max(t.Masters, 1) + t.Replicas
}

// NodeIndex returns i for a Redis node named "n<i>" of t, else 0.
func (t Topology) NodeIndex(node string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(node, "n"))
	if err != nil || !strings.HasPrefix(node, "n") || i < 1 || i > t.NodeCount() {
		return 0
	}
	return i
}

// IsReplica reports whether the node named node starts as a replica in t.
func (t Topology) IsReplica(node string) bool {
	i := t.NodeIndex(node)
	if t.Shards > 0 {
		return i > t.Shards
	}
	return i > max(t.Masters, 1)
}

// reversed returns a reversed copy of ns.
func reversed(ns []*Node) []*Node {
	out := slices.Clone(ns)
	slices.Reverse(out)
	return out
}
