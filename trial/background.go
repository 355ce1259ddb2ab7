package trial

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
)

// backgroundKey is the key background writes go to, never a lock's.
const backgroundKey = "lockpick:background"

// backgroundWrites writes backgroundKey to every node of c, straight to its
// process (past its proxy), every interval until the returned stop is
// called. Errors (a node down) are ignored: the traffic only has to exist
// while a node is up. With interval 0 it does nothing.
func backgroundWrites(c *cluster.Cluster, interval time.Duration) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		if n.Proc == nil {
			continue
		}
		timeout := max(interval, 100*time.Millisecond)
		rdb := redis.NewClient(&redis.Options{Addr: n.Proc.Addr(), MaxRetries: -1, PoolSize: 1,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
		wg.Go(func() {
			defer rdb.Close()
			t := time.NewTicker(interval)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				_ = rdb.Set(ctx, backgroundKey, strconv.Itoa(i), 0).Err()
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

// alignStart waits until the wall clock is at a multiple of d (d > 0).
func alignStart(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	now := time.Now()
	if !sleep(ctx, now.Truncate(d).Add(d).Sub(now)) {
		return ctx.Err()
	}
	return nil
}
