package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster"

	"github.com/redis/go-redis/v9"
)

// A SentinelFailoverFault has the sentinels fail the master over at once
// (SENTINEL FAILOVER), without waiting for it to be seen down: the fast
// path to a promoted replica. Sentinels choose the replica; the old master
// is demoted by them. For a failover forced by a crash, inject a
// [KillFault] on the master and call [cluster.Cluster.WaitFailover]. Its effect is
// a change: the node it names was master when it was injected, and another
// is after.
type SentinelFailoverFault struct {
	// Timeout bounds the wait for the new master. default: 10s.
	Timeout time.Duration `json:"timeout"`

	mu  sync.Mutex
	was *cluster.Node // the master the sentinels named when Inject asked
}

var (
	_ Fault    = (*SentinelFailoverFault)(nil)
	_ Verifier = (*SentinelFailoverFault)(nil)
)

// Inject asks the sentinels to fail over the master n and waits until
// another node is master. It returns [cluster.ErrNoFailover] if none is in time. If
// the sentinels do not name n master, it asks nothing: there is nothing of
// n to fail over, and Verify says so.
func (f *SentinelFailoverFault) Inject(ctx context.Context, n *cluster.Node) error {
	if n == nil || n.Cluster() == nil || len(n.Cluster().Sentinels) == 0 {
		return fmt.Errorf("%w: %s: no sentinels", cluster.ErrNoFailover, nodeName(n))
	}
	c := n.Cluster()
	was, err := c.CurrentMaster(ctx)
	if err != nil {
		return fmt.Errorf("%w: who is master: %w", cluster.ErrNoFailover, err)
	}
	f.mu.Lock()
	f.was = was
	f.mu.Unlock()
	if was != n {
		return nil
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var errs []error
	asked := false
	for _, s := range c.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second})
		err := sc.Failover(ctx, cluster.MasterName).Err()
		_ = sc.Close()
		if err == nil {
			asked = true
			break
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
	}
	if !asked {
		return fmt.Errorf("%w: %w", cluster.ErrNoFailover, errors.Join(errs...))
	}
	_, err = c.WaitFailover(ctx, n, timeout)
	return err
}

// Heal does nothing: a failover is not undone.
func (f *SentinelFailoverFault) Heal(ctx context.Context, n *cluster.Node) error { return nil }

// Verify asks every sentinel which node is master and returns e.g.
// "sentinels now name n2 master" (or "2 of 3 sentinels ...") if an
// answering one names a node other than n. It returns an error wrapping
// [ErrNoEffect] if n was not master when Inject asked (a switch away from
// it is none of its doing) or if the answering sentinels all name n or
// unknown nodes, and another error if none answers within 300ms.
func (f *SentinelFailoverFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	if n == nil || n.Cluster() == nil || len(n.Cluster().Sentinels) == 0 {
		return "", fmt.Errorf("%w: %s: no sentinels", cluster.ErrNoFailover, nodeName(n))
	}
	f.mu.Lock()
	was := f.was
	f.mu.Unlock()
	if was != n {
		return "", noEffect("%s was not master when the failover was asked (the sentinels named %s)", n.Name, nodeName(was))
	}
	c := n.Cluster()
	var (
		errs  []error
		named = map[*cluster.Node]int{}
		views []string
	)
	for _, s := range c.Sentinels {
		addr, err := askMaster(ctx, s.Addr())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		m := c.NodeByAddr(addr)
		if m == nil {
			views = append(views, s.Name+" names unknown "+addr)
			continue
		}
		named[m]++
		views = append(views, s.Name+" names "+m.Name)
	}
	if len(views) == 0 {
		return "", fmt.Errorf("cluster: no sentinel answered: %w", errors.Join(errs...))
	}
	var best *cluster.Node
	for _, m := range c.Nodes {
		if m != n && named[m] > 0 && (best == nil || named[m] > named[best]) {
			best = m
		}
	}
	if best == nil {
		return "", noEffect("no sentinel names a master other than %s (%s)", n.Name, strings.Join(views, ", "))
	}
	if named[best] == len(c.Sentinels) {
		return "sentinels now name " + best.Name + " master", nil
	}
	return fmt.Sprintf("%d of %d sentinels now name %s master", named[best], len(c.Sentinels), best.Name), nil
}

// askMaster is [cluster.MasterAddr] bounded by 300ms.
func askMaster(ctx context.Context, sentinelAddr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	s := redis.NewSentinelClient(&redis.Options{Addr: sentinelAddr, MaxRetries: -1, PoolSize: 1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, ContextTimeoutEnabled: true})
	defer s.Close()
	hp, err := s.GetMasterAddrByName(ctx, cluster.MasterName).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// Describe returns "sentinel failover".
func (f *SentinelFailoverFault) Describe() string { return "sentinel failover" }

func init() { RegisterFault("sentinel-failover", func() Fault { return new(SentinelFailoverFault) }) }

// Place accepts a topology with sentinels, and the nodes they watch: the
// first master and its replicas (see [Placer]).
func (f *SentinelFailoverFault) Place(t cluster.Topology, node string) error {
	if t.Sentinels == 0 || t.Shards > 0 {
		return errors.New("needs sentinels (topology.sentinels)")
	}
	if node != "" && node != "n1" && !t.IsReplica(node) {
		return fmt.Errorf("the sentinels watch n1 and its replicas, not %q", node)
	}
	return onRedisNode(t, node)
}
