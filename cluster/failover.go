package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A SentinelFailoverFault has the sentinels fail the master over at once
// (SENTINEL FAILOVER), without waiting for it to be seen down: the fast
// path to a promoted replica. Sentinels choose the replica; the old master
// is demoted by them. For a failover forced by a crash, inject a
// [KillFault] on the master and call [Cluster.WaitFailover].
type SentinelFailoverFault struct {
	// Timeout bounds the wait for the new master. default: 10s.
	Timeout time.Duration `json:"timeout"`
}

var _ Fault = (*SentinelFailoverFault)(nil)

// Inject asks the sentinels to fail over the master n and waits until
// another node is master. It returns [ErrNoFailover] if none is in time.
func (f *SentinelFailoverFault) Inject(ctx context.Context, n *Node) error {
	if n == nil || n.cluster == nil || len(n.cluster.Sentinels) == 0 {
		return fmt.Errorf("%w: %s: no sentinels", ErrNoFailover, nodeName(n))
	}
	c := n.cluster
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var errs []error
	asked := false
	for _, s := range c.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second})
		err := sc.Failover(ctx, MasterName).Err()
		_ = sc.Close()
		if err == nil {
			asked = true
			break
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
	}
	if !asked {
		return fmt.Errorf("%w: %w", ErrNoFailover, errors.Join(errs...))
	}
	_, err := c.WaitFailover(ctx, n, timeout)
	return err
}

// Heal does nothing: a failover is not undone.
func (f *SentinelFailoverFault) Heal(ctx context.Context, n *Node) error { return nil }

// Describe returns "sentinel failover".
func (f *SentinelFailoverFault) Describe() string { return "sentinel failover" }

func init() { RegisterFault("sentinel-failover", func() Fault { return new(SentinelFailoverFault) }) }
