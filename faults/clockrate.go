package faults

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A ClockRateFault makes a node's clocks run fast or slow, as a drifting
// oscillator does: with Rate 2 a 10 s TTL lasts 5 s of true time. The node
// must run under the clock shim ([cluster.ProcessBackend.ClockShim]).
type ClockRateFault struct {
	// Rate is clock seconds per true second; it must be positive.
	Rate float64 `json:"rate"`
}

var (
	_ Fault    = (*ClockRateFault)(nil)
	_ Verifier = (*ClockRateFault)(nil)
)

// Inject sets the rate. It returns [cluster.ErrBadFault] for a rate that is not
// positive and [cluster.ErrNoClock] for a node without the shim.
func (f *ClockRateFault) Inject(ctx context.Context, n *cluster.Node) error {
	c, err := clockOf(n)
	if err != nil {
		return err
	}
	return c.SetRate(f.Rate)
}

// Heal puts the node's wall clock back on true time at the true rate,
// undoing every clock fault on it (see [cluster.Clock.Reset]).
func (f *ClockRateFault) Heal(ctx context.Context, n *cluster.Node) error {
	c, err := clockOf(n)
	if err != nil {
		return err
	}
	return c.Reset()
}

// Verify reads the node's TIME on its own address twice, 200ms of true
// time apart, and returns e.g. "clock rate ×2.01 (read back with TIME)" if
// the clock advanced Rate times as fast as the host's, ±15%. Otherwise it
// returns an error wrapping [ErrNoEffect].
func (f *ClockRateFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	if _, err := clockOf(n); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	rdb := timeClient(n.Proc.Addr())
	defer rdb.Close()
	r1, err := readTime(ctx, rdb)
	if err != nil {
		return "", fmt.Errorf("%s: %w", n.Name, err)
	}
	if err := cluster.SleepCtx(ctx, 200*time.Millisecond); err != nil {
		return "", err
	}
	r2, err := readTime(ctx, rdb)
	if err != nil {
		return "", fmt.Errorf("%s: %w", n.Name, err)
	}
	rate := float64(r2.server.Sub(r1.server)) / float64(r2.host.Sub(r1.host))
	got := "×" + strconv.FormatFloat(rate, 'f', 2, 64)
	if math.Abs(rate-f.Rate) > 0.15*f.Rate {
		return "", noEffect("%s: TIME advanced at %s true time, want ×%v ±15%%", n.Name, got, f.Rate)
	}
	return "clock rate " + got + " (read back with TIME)", nil
}

// Describe returns e.g. "clock rate ×2".
func (f *ClockRateFault) Describe() string {
	return "clock rate ×" + strconv.FormatFloat(f.Rate, 'g', -1, 64)
}

func init() { RegisterFault("clock-rate", func() Fault { return new(ClockRateFault) }) }

// Place accepts the Redis nodes only (see [Placer]): it refuses etcd
// members, which the clock shim cannot reach, and ZooKeeper members and
// PostgreSQL nodes, whose clock it cannot read back precisely enough.
func (f *ClockRateFault) Place(t cluster.Topology, node string) error {
	return clockRateOnRedis(t, node)
}
