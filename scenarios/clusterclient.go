package scenarios

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A client of a Redis Cluster is go-redis's ClusterClient, as services use
// it: it learns the slot map from the nodes and follows MOVED and ASK
// redirects. Redirects name the address a node announces; the client's
// dialer turns it into the node's client proxy (the view's Addr), so a
// redirected client still meets the faults on the clients' path.
//
// Unlike the single-node client, a ClusterClient cannot be told not to
// retry: after a network error it sends the command again (go-redis
// retries within its redirect budget), so an acquire whose first try may
// have run can be sent twice. That is the library users run, and a lock
// under test must cope with it.

// clusterClient returns the target's cluster client, made on first use.
func (t *target) clusterClient() *redis.ClusterClient {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cluster != nil {
		return t.cluster
	}
	dial := map[string]string{}
	var seeds []string
	for _, n := range t.view.Nodes {
		seeds = append(seeds, n.Addr)
		if n.Announced != "" {
			dial[n.Announced] = n.Addr
		}
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        seeds,
		MaxRetries:   -1,
		DialTimeout:  250 * time.Millisecond,
		ReadTimeout:  500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond,
		PoolSize:     4,
		// go-redis reloads the slot map on a MOVED reply, or when it is
		// older than this (default 60s): a client that only ever talks to
		// a dead primary learns of its replica's promotion this late.
		// Redisson rescans every 5s; 1s keeps trials short.
		ClusterStateReloadInterval: time.Second,
		// As for single nodes (see client): deadlines reach the socket.
		ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if a, ok := dial[addr]; ok {
				addr = a
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	})
	rdb.OnNewNode(func(c *redis.Client) { c.AddHook(servedHook{addr: c.Options().Addr}) })
	t.cluster = rdb
	return rdb
}

// nodeNamed returns the name of the node at addr, a client or an announced
// address, or addr itself.
func (t *target) nodeNamed(addr string) string {
	for _, n := range t.view.Nodes {
		if n.Addr == addr || n.Announced == addr {
			return n.Name
		}
	}
	return addr
}

// servedKey is the context key of a *served.
type servedKey struct{}

// served records the address of the node that last answered a command
// sent under a context (see withServed).
type served struct {
	mu   sync.Mutex
	addr string
}

// withServed returns a context under which every command a cluster client
// sends records the node that answered it, and a func returning that node.
func withServed(ctx context.Context) (context.Context, func() string) {
	s := &served{}
	return context.WithValue(ctx, servedKey{}, s), func() string {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.addr
	}
}

// servedHook is the hook on every node client of a cluster client that
// records which node answered.
type servedHook struct{ addr string }

func (h servedHook) note(ctx context.Context) {
	if s, ok := ctx.Value(servedKey{}).(*served); ok {
		s.mu.Lock()
		s.addr = h.addr
		s.mu.Unlock()
	}
}

func (h servedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h servedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.note(ctx)
		return err
	}
}

func (h servedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.note(ctx)
		return err
	}
}

// keyPrimary returns the node serving key's slot, as the target's cluster
// client knows the slot map.
func (t *target) keyPrimary(ctx context.Context, key string) (NodeAddr, error) {
	rdb, err := t.clusterClient().MasterForKey(ctx, key)
	if err != nil {
		return NodeAddr{}, err
	}
	addr := rdb.Options().Addr
	for _, n := range t.view.Nodes {
		if n.Announced == addr || n.Addr == addr {
			return n, nil
		}
	}
	return NodeAddr{}, fmt.Errorf("the cluster names unknown node %s for %q", addr, key)
}
