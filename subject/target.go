package subject

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/lockcore"
)

// A View is what a client knows of the deployment: the nodes' proxied
// addresses by name, and the sentinels. It is plain data, so a worker in
// another process gets the same view.
type View struct {
	Nodes []NodeAddr `json:"nodes"`
	// Masters is how many of Nodes, from the first, are masters; the rest
	// are replicas (of the first).
	Masters   int      `json:"masters,omitempty"`
	Sentinels []string `json:"sentinels,omitempty"`
	// Resource is the address of the protected resource, through this
	// client's own proxy.
	Resource string `json:"resource,omitempty"`
	// Cluster says the nodes form one Redis Cluster; Masters counts its
	// primaries, and a node's Announced address must be dialled as its Addr.
	Cluster bool `json:"cluster,omitempty"`
	// Etcd lists the etcd members of an etcd topology (then Nodes is
	// empty), e1 first, each at its client proxy's address.
	Etcd []NodeAddr `json:"etcd,omitempty"`
	// Postgres lists the PostgreSQL nodes of a PostgreSQL topology (then
	// Nodes is empty), p1 first, each at its proxy's address.
	Postgres []NodeAddr `json:"postgres,omitempty"`
	// ZooKeeper lists the members of a ZooKeeper ensemble (then Nodes is
	// empty), z1 first, each at its proxy's address.
	ZooKeeper []NodeAddr `json:"zookeeper,omitempty"`
}

// A NodeAddr is a node's name and the address clients dial.
type NodeAddr struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// Announced is the address the node is known by when that is not Addr:
	// in a Redis Cluster the one it gives in CLUSTER SLOTS and redirects,
	// and with per-client links (see [ClientLinks]) the node's shared client
	// proxy, which sentinels name. A client dials Addr instead.
	Announced string `json:"announced,omitempty"`
}

// clientLinkName names client p's own link to node, e.g. "n1-c2".
func clientLinkName(node string, p int) string { return fmt.Sprintf("%s-c%d", node, p) }

// ClientLinks gives client p its own proxy to every node (and etcd
// member), in front of the node's client proxy, and points v's nodes at them: a fault on "n1-c2"
// then cuts client 2 alone from n1, while faults on n1 still reach every
// client.
func ClientLinks(c *cluster.Cluster, v View, p int) (View, error) {
	nodes := make([]NodeAddr, len(v.Nodes))
	for i, n := range v.Nodes {
		l, err := c.AddProxy(clientLinkName(n.Name, p), n.Addr)
		if err != nil {
			return v, err
		}
		nodes[i] = NodeAddr{Name: n.Name, Addr: l.Addr(), Announced: n.Announced}
		if nodes[i].Announced == "" {
			nodes[i].Announced = n.Addr
		}
	}
	v.Nodes = nodes
	var err error
	if v.Etcd, err = clientLinksTo(c, v.Etcd, p); err != nil {
		return v, err
	}
	if v.Postgres, err = clientLinksTo(c, v.Postgres, p); err != nil {
		return v, err
	}
	if v.ZooKeeper, err = clientLinksTo(c, v.ZooKeeper, p); err != nil {
		return v, err
	}
	return v, nil
}

// clientLinksTo gives client p its own proxy to each of nodes, announced
// as the node's shared proxy, and returns them.
func clientLinksTo(c *cluster.Cluster, nodes []NodeAddr, p int) ([]NodeAddr, error) {
	out := make([]NodeAddr, len(nodes))
	for i, m := range nodes {
		l, err := c.AddProxy(clientLinkName(m.Name, p), m.Addr)
		if err != nil {
			return nodes, err
		}
		out[i] = NodeAddr{Name: m.Name, Addr: l.Addr(), Announced: m.Addr}
	}
	return out, nil
}

// ViewOf is the view of c's nodes and sentinels that every client starts from.
func ViewOf(c *cluster.Cluster) View {
	v := View{Sentinels: c.SentinelAddrs(), Cluster: c.IsRedisCluster()}
	for i, n := range c.Nodes {
		a := NodeAddr{Name: n.Name, Addr: n.Addr()}
		if n.Peer != nil {
			a.Announced = n.Peer.Addr()
		}
		v.Nodes = append(v.Nodes, a)
		if (v.Cluster && i < c.Primaries()) || (!v.Cluster && n.Repl == nil) {
			v.Masters++
		}
	}
	for _, n := range c.Etcd {
		v.Etcd = append(v.Etcd, NodeAddr{Name: n.Name, Addr: n.Addr()})
	}
	for _, n := range c.Postgres {
		v.Postgres = append(v.Postgres, NodeAddr{Name: n.Name, Addr: n.Addr()})
	}
	for _, n := range c.ZooKeeper {
		v.ZooKeeper = append(v.ZooKeeper, NodeAddr{Name: n.Name, Addr: n.Addr()})
	}
	return v
}

// A Target turns a View into clients: a fixed node, or whatever the
// sentinels currently call master.
type Target struct {
	view View

	mu      sync.Mutex
	clients map[string]*redis.Client
	cluster *redis.ClusterClient // of a Redis Cluster view, made on first use
}

// NewTarget makes the clients of view v (none is dialled yet outside a
// Redis Cluster); Close closes them.
func NewTarget(v View) *Target {
	t := &Target{view: v, clients: map[string]*redis.Client{}}
	if v.Cluster {
		t.warmUp()
	}
	return t
}

// master returns a client for the current master and its node name: the
// first node, or with sentinels the node the first answering sentinel names.
func (t *Target) master(ctx context.Context) (*redis.Client, string, error) {
	n := t.view.Nodes[0]
	if len(t.view.Sentinels) > 0 {
		var err error
		if n, err = t.askSentinels(ctx); err != nil {
			return nil, "", err
		}
	}
	return t.client(n.Addr), n.Name, nil
}

func (t *Target) askSentinels(ctx context.Context) (NodeAddr, error) {
	var last error
	for _, s := range t.view.Sentinels {
		addr, err := cluster.MasterAddr(ctx, s)
		if err != nil {
			last = err
			continue
		}
		for _, n := range t.view.Nodes {
			if n.Addr == addr || n.Announced == addr {
				return n, nil
			}
		}
		last = fmt.Errorf("sentinel %s names unknown master %s", s, addr)
	}
	return NodeAddr{}, fmt.Errorf("no master known: %w", last)
}

// firstNode returns the view's first node, or in an etcd, ZooKeeper or
// PostgreSQL topology its first member.
func (t *Target) firstNode() NodeAddr {
	for _, ns := range [][]NodeAddr{t.view.Nodes, t.view.Etcd, t.view.ZooKeeper, t.view.Postgres} {
		if len(ns) > 0 {
			return ns[0]
		}
	}
	return NodeAddr{}
}

// masterNodes returns the masters among the view's nodes: the first
// Masters of them (all, in a view without the count).
func (t *Target) masterNodes() []NodeAddr {
	if m := t.view.Masters; m > 0 && m < len(t.view.Nodes) {
		return t.view.Nodes[:m]
	}
	return t.view.Nodes
}

// masters returns a client per master, in node order, with their names.
func (t *Target) masters() ([]*redis.Client, []string) {
	nodes := t.masterNodes()
	clients := make([]*redis.Client, len(nodes))
	names := make([]string, len(nodes))
	for i, n := range nodes {
		clients[i], names[i] = t.client(n.Addr), n.Name
	}
	return clients, names
}

// redlockNodes returns what a Redlock client talks to, one per master in
// node order: each master's client, except that with sentinels the first
// follows whichever node they call its master (a *follower).
func (t *Target) redlockNodes() []redis.Scripter {
	if t.view.Cluster {
		// One cluster client per primary's key (see shardKeys): it sends
		// each key to whichever node serves its slot now.
		out := make([]redis.Scripter, t.view.Masters)
		for i := range out {
			out[i] = &shardNode{rdb: t.clusterClient()}
		}
		return out
	}
	clients, _ := t.masters()
	out := make([]redis.Scripter, len(clients))
	for i, c := range clients {
		out[i] = c
	}
	if len(t.view.Sentinels) > 0 {
		out[0] = &follower{t: t}
	}
	return out
}

// client returns a pooled client for addr. Retries are off: a retried
// acquire would hide from the history that the first try may have run.
func (t *Target) client(addr string) *redis.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	rdb, ok := t.clients[addr]
	if !ok {
		rdb = redis.NewClient(&redis.Options{MaintNotificationsConfig: lockcore.NoMaintNotifications(),
			Addr:         addr,
			MaxRetries:   -1,
			DialTimeout:  250 * time.Millisecond,
			ReadTimeout:  500 * time.Millisecond,
			WriteTimeout: 500 * time.Millisecond,
			PoolSize:     4,
			// Deadlines from contexts reach the socket, so a silent node
			// costs a lock its node timeout, not the ReadTimeout.
			ContextTimeoutEnabled: true,
		})
		t.clients[addr] = rdb
	}
	return rdb
}

// Close closes the target's clients.
func (t *Target) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rdb := range t.clients {
		_ = rdb.Close()
	}
	if t.cluster != nil {
		_ = t.cluster.Close()
	}
}

// PingNodes opens the target's connection to each node with a PING, so an
// isolated client's first acquire does not pay for the dial and handshake
// (a cold process's first round trip took 300 ms on a busy host, after a
// pause meant for the holder had hit). Errors are the trial's to see.
func (t *Target) PingNodes(ctx context.Context) {
	if t.view.Cluster || len(t.view.Nodes) == 0 {
		return // NewTarget warmed its cluster client up; etcd subjects warm up their own
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for _, n := range t.view.Nodes {
		_ = t.client(n.Addr).Ping(ctx).Err()
	}
}
