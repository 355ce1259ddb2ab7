package subject

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/lockcore"
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
// under test must cope with it; the history records such a call's outcome
// as unknown when its final answer alone would say it surely failed (see
// Served.Outcome).

// clusterClient returns the target's cluster client, made on first use.
func (t *Target) clusterClient() *redis.ClusterClient {
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

// warmUp loads the cluster client's slot map and command table before the
// trial's faults start, as a long-running service has them: otherwise the
// first acquire would spend its node timeout loading them, through links a
// fault may already cut.
func (t *Target) warmUp() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rdb := t.clusterClient()
	rdb.ReloadState(ctx)
	_ = rdb.Get(ctx, "lockpick:warm-up").Err() // loads COMMAND too; redis.Nil expected
}

// nodeNamed returns the name of the node at addr, a client or an announced
// address, or addr itself.
func (t *Target) nodeNamed(addr string) string {
	for _, n := range t.view.Nodes {
		if n.Addr == addr || n.Announced == addr {
			return n.Name
		}
	}
	return addr
}

// servedKey is the context key of a *served.
type servedKey struct{}

// served records, for the commands a cluster client sent under one context
// (see withServed), the node that answered the last of them and whether
// any attempt may have run without being answered.
type served struct {
	mu        sync.Mutex
	addr      string
	uncertain bool
}

// withServed returns a context under which every command a cluster client
// sends is noted in the returned *served.
func withServed(ctx context.Context) (context.Context, *served) {
	s := &served{}
	return context.WithValue(ctx, servedKey{}, s), s
}

func (s *served) get() (addr string, uncertain bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr, s.uncertain
}

// servedHook is the hook on every node client of a cluster client that
// records which node answered.
type servedHook struct{ addr string }

// note records that the node answered cmd with err. The client's own
// slot-map reloads (CLUSTER SLOTS) are not the caller's commands.
func (h servedHook) note(ctx context.Context, cmd redis.Cmder, err error) {
	s, ok := ctx.Value(servedKey{}).(*served)
	if !ok || cmd.Name() == "cluster" {
		return
	}
	s.mu.Lock()
	s.addr = h.addr
	s.uncertain = s.uncertain || lockcore.MayHaveRun(err)
	s.mu.Unlock()
}

func (h servedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h servedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.note(ctx, cmd, err)
		return err
	}
}

func (h servedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.note(ctx, cmd, cmd.Err())
		}
		return err
	}
}

// keyPrimary returns the node serving key's slot, as the target's cluster
// client knows the slot map.
func (t *Target) keyPrimary(ctx context.Context, key string) (NodeAddr, error) {
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

// shardKeys returns, for Redlock over a Redis Cluster of n primaries, one
// key per primary derived from key, "{key-T}" with the first T that hashes
// into primary i's slots as the cluster started (cluster.SlotRange).
func shardKeys(key string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		lo, hi := cluster.SlotRange(i, n)
		for t := 0; ; t++ { // about n tries: CRC16 spreads the tags
			k := fmt.Sprintf("{%s-%d}", key, t)
			if s := lockcore.Slot(k); s >= lo && s <= hi {
				keys[i] = k
				break
			}
		}
	}
	return keys
}

// A shardNode is one of Redlock's nodes over a Redis Cluster: the shared
// cluster client, noting which node answered this node's key last, so a
// grant names the nodes that really took it (a promoted replica included).
type shardNode struct {
	rdb  *redis.ClusterClient
	mu   sync.Mutex
	last string // address of the node that answered last
}

var _ redis.Scripter = (*shardNode)(nil)

// note runs call under a served context and records who answered.
func (n *shardNode) note(ctx context.Context, call func(context.Context)) {
	ctx, s := withServed(ctx)
	call(ctx)
	if a, _ := s.get(); a != "" {
		n.mu.Lock()
		n.last = a
		n.mu.Unlock()
	}
}

// answered returns the address of the node that answered last, or "".
func (n *shardNode) answered() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last
}

func (n *shardNode) SetNX(ctx context.Context, key string, value any, ttl time.Duration) (c *redis.BoolCmd) {
	n.note(ctx, func(ctx context.Context) { c = n.rdb.SetNX(ctx, key, value, ttl) })
	return c
}

func (n *shardNode) Eval(ctx context.Context, script string, keys []string, args ...any) (c *redis.Cmd) {
	n.note(ctx, func(ctx context.Context) { c = n.rdb.Eval(ctx, script, keys, args...) })
	return c
}

func (n *shardNode) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) (c *redis.Cmd) {
	n.note(ctx, func(ctx context.Context) { c = n.rdb.EvalSha(ctx, sha1, keys, args...) })
	return c
}

func (n *shardNode) EvalRO(ctx context.Context, script string, keys []string, args ...any) (c *redis.Cmd) {
	n.note(ctx, func(ctx context.Context) { c = n.rdb.EvalRO(ctx, script, keys, args...) })
	return c
}

func (n *shardNode) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) (c *redis.Cmd) {
	n.note(ctx, func(ctx context.Context) { c = n.rdb.EvalShaRO(ctx, sha1, keys, args...) })
	return c
}

func (n *shardNode) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return n.rdb.ScriptExists(ctx, hashes...)
}

func (n *shardNode) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return n.rdb.ScriptLoad(ctx, script)
}
