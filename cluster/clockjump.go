package cluster

import (
	"context"
	"fmt"
	"time"
)

// A ClockJumpFault steps a node's wall clock by Offset while it runs, as a
// bad NTP step or an operator's date command would: keys expire early after
// a forward jump (a lease with TTL t is gone after a jump of more than t),
// late after a backward one, and TIME moves with it. The node must run
// under the clock shim ([ProcessBackend.ClockShim]).
type ClockJumpFault struct {
	// Offset is the step: positive jumps forward, negative back.
	Offset time.Duration `json:"offset"`
}

var _ Fault = (*ClockJumpFault)(nil)

// Inject steps the clock. Each Inject steps again, so two add up. It
// returns [ErrNoClock] for a node without the shim.
func (f *ClockJumpFault) Inject(ctx context.Context, n *Node) error {
	c, err := clockOf(n)
	if err != nil {
		return err
	}
	return c.Jump(f.Offset)
}

// Heal puts the node's wall clock back on true time, undoing every clock
// fault on it (see [Clock.Reset]).
func (f *ClockJumpFault) Heal(ctx context.Context, n *Node) error {
	c, err := clockOf(n)
	if err != nil {
		return err
	}
	return c.Reset()
}

// Describe returns e.g. "clock jump +20s".
func (f *ClockJumpFault) Describe() string {
	if f.Offset >= 0 {
		return "clock jump +" + f.Offset.String()
	}
	return "clock jump " + f.Offset.String()
}

// clockOf returns the node's clock, or [ErrNoProcess] or [ErrNoClock].
func clockOf(n *Node) (*Clock, error) {
	p, err := procOf(n)
	if err != nil {
		return nil, err
	}
	if cp, ok := p.(ClockedProc); ok {
		if c := cp.Clock(); c != nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoClock, n.Name)
}

func init() { RegisterFault("clock-jump", func() Fault { return new(ClockJumpFault) }) }
