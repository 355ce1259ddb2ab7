package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A ClockJumpFault steps a node's wall clock by Offset while it runs, as a
// bad NTP step or an operator's date command would: Redis keys expire
// early after a forward jump (a lease with TTL t is gone after a jump of
// more than t), late after a backward one, and TIME moves with it. The
// node, a Redis node, a ZooKeeper member or a PostgreSQL node, must run
// under the clock shim ([cluster.ProcessBackend.ClockShim]); the monotonic
// clock does not move (ZooKeeper times sessions by it).
type ClockJumpFault struct {
	// Offset is the step: positive jumps forward, negative back.
	Offset time.Duration `json:"offset"`
}

var (
	_ Fault    = (*ClockJumpFault)(nil)
	_ Verifier = (*ClockJumpFault)(nil)
)

// clockTolerance is how far a clock read back (TIME, clock_timestamp(),
// cons) may be from the offset its [cluster.Clock] expects, beyond half
// the read's round trip.
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

// Verify reads the node's wall clock back on its own address (Redis's
// TIME, PostgreSQL's clock_timestamp(), a ZooKeeper member's stamp of a
// connection it accepted: see readClock) and returns e.g. "clock +5.001s
// (read back with TIME)" if the clock is off true time by the offset its
// [cluster.Clock] expects, within 250ms plus half the read's round trip.
// It returns an error wrapping [ErrNoEffect] if the clock read shows true
// time although Offset is larger than that (the shim is not loaded, or
// the clock was reset), or another offset.
func (f *ClockJumpFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	c, err := clockOf(n)
	if err != nil {
		return "", err
	}
	r, how, err := readClock(ctx, n)
	if err != nil {
		return "", fmt.Errorf("%s: %w", n.Name, err)
	}
	want, err := c.Offset()
	if err != nil {
		return "", err
	}
	got, tol := r.offset(), clockTolerance+r.rtt/2
	if got.Abs() <= tol && f.Offset.Abs() > tol {
		return "", noEffect("%s: its clock (%s) is %s off true time, the clock did not move by %s (shim not loaded, or clock reset)",
			n.Name, how, signedDuration(got), signedDuration(f.Offset))
	}
	if (got - want).Abs() > tol {
		return "", noEffect("%s: its clock (%s) is %s off true time, want %s ±%v",
			n.Name, how, signedDuration(got), signedDuration(want), tol.Round(time.Millisecond))
	}
	return "clock " + signedDuration(got) + " (" + how + ")", nil
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
	if cluster.IsZooKeeperMember(n) {
		// The docker backend's members run without it.
		return nil, fmt.Errorf("%w: %s (a ZooKeeper member's JVM runs under the clock shim on the process backend only)", cluster.ErrNoClock, n.Name)
	}
	return nil, fmt.Errorf("%w: %s", cluster.ErrNoClock, n.Name)
}

func init() { RegisterFault("clock-jump", func() Fault { return new(ClockJumpFault) }) }

// Place accepts Redis nodes, ZooKeeper members and PostgreSQL nodes (see
// [Placer]); it refuses etcd members, which the clock shim cannot reach.
func (f *ClockJumpFault) Place(t cluster.Topology, node string) error {
	return underClockShim(t, node)
}
