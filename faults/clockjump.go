package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A ClockJumpFault steps a node's wall clock by Offset while it runs, as a
// bad NTP step or an operator's date command would: keys expire early after
// a forward jump (a lease with TTL t is gone after a jump of more than t),
// late after a backward one, and TIME moves with it. The node must run
// under the clock shim ([cluster.ProcessBackend.ClockShim]).
type ClockJumpFault struct {
	// Offset is the step: positive jumps forward, negative back.
	Offset time.Duration `json:"offset"`
}

var (
	_ Fault    = (*ClockJumpFault)(nil)
	_ Verifier = (*ClockJumpFault)(nil)
)

// clockTolerance is how far a clock read back with TIME may be from the
// offset its [cluster.Clock] expects.
const clockTolerance = 250 * time.Millisecond

// Inject steps the clock. Each Inject steps again, so two add up. It
// returns [cluster.ErrNoClock] for a node without the shim.
func (f *ClockJumpFault) Inject(ctx context.Context, n *cluster.Node) error {
	c, err := clockOf(n)
	if err != nil {
		return err
	}
	return c.Jump(f.Offset)
}

// Heal puts the node's wall clock back on true time, undoing every clock
// fault on it (see [cluster.Clock.Reset]).
func (f *ClockJumpFault) Heal(ctx context.Context, n *cluster.Node) error {
	c, err := clockOf(n)
	if err != nil {
		return err
	}
	return c.Reset()
}

// Verify reads the node's TIME on its own address and returns e.g. "clock
// +5.001s (read back with TIME)" if the clock is off true time by the
// offset its [cluster.Clock] expects (±250ms). It returns an error wrapping
// [ErrNoEffect] if TIME shows true time although Offset is larger than
// that (the shim is not loaded, or the clock was reset), or another offset.
func (f *ClockJumpFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	c, err := clockOf(n)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	rdb := timeClient(n.Proc.Addr())
	defer rdb.Close()
	r, err := readTime(ctx, rdb)
	if err != nil {
		return "", fmt.Errorf("%s: %w", n.Name, err)
	}
	want, err := c.Offset()
	if err != nil {
		return "", err
	}
	got := r.offset()
	if got.Abs() <= clockTolerance && f.Offset.Abs() > clockTolerance {
		return "", noEffect("%s: TIME is %s off true time, the clock did not move by %s (shim not loaded, or clock reset)",
			n.Name, signedDuration(got), signedDuration(f.Offset))
	}
	if (got - want).Abs() > clockTolerance {
		return "", noEffect("%s: TIME is %s off true time, want %s ±%v",
			n.Name, signedDuration(got), signedDuration(want), clockTolerance)
	}
	return "clock " + signedDuration(got) + " (read back with TIME)", nil
}

// Describe returns e.g. "clock jump +20s".
func (f *ClockJumpFault) Describe() string {
	if f.Offset >= 0 {
		return "clock jump +" + f.Offset.String()
	}
	return "clock jump " + f.Offset.String()
}

// clockOf returns the node's clock, or [cluster.ErrNoProcess] or [cluster.ErrNoClock].
func clockOf(n *cluster.Node) (*cluster.Clock, error) {
	p, err := procOf(n)
	if err != nil {
		return nil, err
	}
	if cp, ok := p.(cluster.ClockedProc); ok {
		if c := cp.Clock(); c != nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", cluster.ErrNoClock, n.Name)
}

func init() { RegisterFault("clock-jump", func() Fault { return new(ClockJumpFault) }) }

// Place accepts the Redis nodes only (see [Placer]); it refuses etcd
// members, which the clock shim cannot reach.
func (f *ClockJumpFault) Place(t cluster.Topology, node string) error {
	return notOnEtcd(t, node, "clock")
}
