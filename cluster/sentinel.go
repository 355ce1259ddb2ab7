package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitSettled waits until every replica's link is up and streaming (see
// waitStreaming) and every sentinel sees the master with all replicas and
// all other sentinels.
func (c *Cluster) waitSettled(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, r := range c.Nodes[c.topo.Masters:] {
		if err := Poll(ctx, func() error { return ReplicaLinkUp(ctx, r.Addr()) }); err != nil {
			return &StartError{Node: r.Name, LogPath: r.Proc.LogPath(), Err: fmt.Errorf("replica never synced: %w", err)}
		}
	}
	if err := c.waitStreaming(ctx); err != nil {
		return err
	}
	for _, s := range c.Sentinels {
		err := Poll(ctx, func() error {
			m, err := sentinelMaster(ctx, s.Addr())
			if err != nil {
				return err
			}
			return c.sentinelSettled(m)
		})
		if err != nil {
			return &StartError{Node: s.Name, LogPath: s.Proc.LogPath(), Err: err}
		}
	}
	return nil
}

// sentinelSettled returns an error saying how a sentinel's view of the
// master (SENTINEL MASTER) falls short of a settled one, the master up with
// every replica and every other sentinel; nil if it does not.
func (c *Cluster) sentinelSettled(m map[string]string) error {
	if m["flags"] != "master" || m["num-slaves"] != fmt.Sprint(c.topo.Replicas) ||
		m["num-other-sentinels"] != fmt.Sprint(len(c.Sentinels)-1) {
		return fmt.Errorf("sentinel view not settled: flags=%s replicas=%s sentinels=%s",
			m["flags"], m["num-slaves"], m["num-other-sentinels"])
	}
	return nil
}

// CurrentMaster asks the sentinels which node is the master and returns the
// answer of the first that replies.
func (c *Cluster) CurrentMaster(ctx context.Context) (*Node, error) {
	var last error = ErrNoFailover
	for _, s := range c.Sentinels {
		addr, err := MasterAddr(ctx, s.Addr())
		if err != nil {
			last = err
			continue
		}
		if n := c.NodeByAddr(addr); n != nil {
			return n, nil
		}
		last = fmt.Errorf("cluster: sentinel %s names unknown master %s", s.Name, addr)
	}
	return nil, last
}

// WaitFailover waits until the sentinels name a master other than old and
// that node reports role master. It returns [ErrNoFailover] on timeout.
func (c *Cluster) WaitFailover(ctx context.Context, old *Node, timeout time.Duration) (*Node, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var promoted *Node
	err := Poll(ctx, func() error {
		n, err := c.CurrentMaster(ctx)
		if err != nil {
			return err
		}
		if n == old {
			return ErrNoFailover
		}
		if role, err := NodeRole(ctx, n.Addr()); err != nil || role != "master" {
			return fmt.Errorf("%s not yet master (role %q): %v", n.Name, role, err)
		}
		promoted = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoFailover, err)
	}
	return promoted, nil
}

// MasterAddr asks one sentinel for the current master's address.
func MasterAddr(ctx context.Context, sentinelAddr string) (string, error) {
	s := redis.NewSentinelClient(&redis.Options{Addr: sentinelAddr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer s.Close()
	hp, err := s.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", fmt.Errorf("cluster: ask sentinel %s: %w", sentinelAddr, err)
	}
	return hp[0] + ":" + hp[1], nil
}

// waitStreaming writes a probe key (expiring after 1 s) on the master and
// waits until every replica acknowledged it.
// After a diskless full sync, Redis 7 buffers the master's writes until
// the replica's first REPLCONF ACK, which the replica sends once a second:
// a replica whose link is "up" can lack every write of that second, and a
// failover then loses them (explore found a double grant after a bare
// sentinel failover this way, 1 trial in 10). WAIT asks the replicas to
// acknowledge at once, so trials start with replication streaming.
func (c *Cluster) waitStreaming(ctx context.Context) error {
	replicas := len(c.Nodes) - c.topo.Masters
	if replicas <= 0 {
		return nil
	}
	m := c.Nodes[0]
	rdb := redis.NewClient(&redis.Options{Addr: m.Proc.Addr(), MaxRetries: -1, ReadTimeout: 3 * time.Second})
	defer rdb.Close()
	// WAIT with nothing written since the sync returns at once: write first.
	if err := rdb.Set(ctx, "lockpick:settled", 1, time.Second).Err(); err != nil {
		return &StartError{Node: m.Name, LogPath: m.Proc.LogPath(), Err: fmt.Errorf("replication probe: %w", err)}
	}
	return Poll(ctx, func() error {
		n, err := rdb.Wait(ctx, replicas, time.Second).Result()
		if err == nil && n < int64(replicas) {
			err = fmt.Errorf("WAIT %d: %d replicas acknowledged", replicas, n)
		}
		if err != nil {
			return &StartError{Node: m.Name, LogPath: m.Proc.LogPath(), Err: fmt.Errorf("replication not streaming: %w", err)}
		}
		return nil
	})
}

func sentinelMaster(ctx context.Context, addr string) (map[string]string, error) {
	s := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer s.Close()
	return s.Master(ctx, MasterName).Result()
}

// Info returns the fields of the INFO section of the process at addr,
// asked on a connection of its own.
func Info(ctx context.Context, addr, section string) (map[string]string, error) {
	rdb := adminClient(addr)
	defer rdb.Close()
	return fields(rdb.Info(ctx, section).Result())
}

// fields parses the "key:value" lines of an INFO or CLUSTER INFO reply.
func fields(s string, err error) (map[string]string, error) {
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// ReplicaLinkUp returns nil if the process at addr is a replica whose
// link to its master is up, and an error saying what it is otherwise.
func ReplicaLinkUp(ctx context.Context, addr string) error {
	m, err := Info(ctx, addr, "replication")
	if err != nil {
		return err
	}
	if m["master_link_status"] != "up" {
		return fmt.Errorf("master_link_status=%s", m["master_link_status"])
	}
	return nil
}

// NodeRole returns the role ("master" or "slave") the process at addr
// reports in INFO replication.
func NodeRole(ctx context.Context, addr string) (string, error) {
	m, err := Info(ctx, addr, "replication")
	if err != nil {
		return "", err
	}
	return m["role"], nil
}

// Poll calls fn every 20ms until it succeeds or ctx ends, returning fn's last error.
func Poll(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}
