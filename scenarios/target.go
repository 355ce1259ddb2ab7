package scenarios

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
)

// A target tells a client which node to talk to: a fixed node, or whatever
// the sentinels currently call master.
type target struct {
	c         *cluster.Cluster
	sentinels bool

	mu      sync.Mutex
	clients map[string]*redis.Client
}

func newTarget(c *cluster.Cluster) *target {
	return &target{c: c, sentinels: len(c.Sentinels) > 0, clients: map[string]*redis.Client{}}
}

// master returns a client for the current master and its node name.
func (t *target) master(ctx context.Context) (*redis.Client, string, error) {
	n := t.c.Nodes[0]
	if t.sentinels {
		var err error
		if n, err = t.c.CurrentMaster(ctx); err != nil {
			return nil, "", err
		}
	}
	return t.client(n.Addr()), n.Name, nil
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
