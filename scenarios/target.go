package scenarios

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
)

// A View is what a client knows of the deployment: the nodes' proxied
// addresses by name, and the sentinels. It is plain data, so a worker in
// another process gets the same view.
type View struct {
	Nodes     []NodeAddr `json:"nodes"`
	Sentinels []string   `json:"sentinels,omitempty"`
	// Resource is the address of the protected resource, through this
	// client's own proxy.
	Resource string `json:"resource,omitempty"`
}

// A NodeAddr is a node's name and the address clients dial.
type NodeAddr struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

func viewOf(c *cluster.Cluster) View {
	v := View{Sentinels: c.SentinelAddrs()}
	for _, n := range c.Nodes {
		v.Nodes = append(v.Nodes, NodeAddr{Name: n.Name, Addr: n.Addr()})
	}
	return v
}

// A target turns a View into clients: a fixed node, or whatever the
// sentinels currently call master.
type target struct {
	view View

	mu      sync.Mutex
	clients map[string]*redis.Client
}

func newTarget(v View) *target { return &target{view: v, clients: map[string]*redis.Client{}} }

// master returns a client for the current master and its node name: the
// first node, or with sentinels the node the first answering sentinel names.
func (t *target) master(ctx context.Context) (*redis.Client, string, error) {
	n := t.view.Nodes[0]
	if len(t.view.Sentinels) > 0 {
		var err error
		if n, err = t.askSentinels(ctx); err != nil {
			return nil, "", err
		}
	}
	return t.client(n.Addr), n.Name, nil
}

func (t *target) askSentinels(ctx context.Context) (NodeAddr, error) {
	var last error
	for _, s := range t.view.Sentinels {
		addr, err := cluster.MasterAddr(ctx, s)
		if err != nil {
			last = err
			continue
		}
		for _, n := range t.view.Nodes {
			if n.Addr == addr {
				return n, nil
			}
		}
		last = fmt.Errorf("sentinel %s names unknown master %s", s, addr)
	}
	return NodeAddr{}, fmt.Errorf("no master known: %w", last)
}

// masters returns a client per node, in node order, with their names.
func (t *target) masters() ([]*redis.Client, []string) {
	clients := make([]*redis.Client, len(t.view.Nodes))
	names := make([]string, len(t.view.Nodes))
	for i, n := range t.view.Nodes {
		clients[i], names[i] = t.client(n.Addr), n.Name
	}
	return clients, names
}

// client returns a pooled client for addr. Retries are off: a retried
// acquire would hide from the history that the first try may have run.
func (t *target) client(addr string) *redis.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	rdb, ok := t.clients[addr]
	if !ok {
		rdb = redis.NewClient(&redis.Options{
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

func (t *target) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rdb := range t.clients {
		_ = rdb.Close()
	}
}
