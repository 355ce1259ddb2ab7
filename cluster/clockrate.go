package cluster

import (
	"context"
	"strconv"
)

// A ClockRateFault makes a node's clocks run fast or slow, as a drifting
// oscillator does: with Rate 2 a 10 s TTL lasts 5 s of true time. The node
// must run under the clock shim ([ProcessBackend.ClockShim]).
type ClockRateFault struct {
	// Rate is clock seconds per true second; it must be positive.
	Rate float64 `json:"rate"`
}

var _ Fault = (*ClockRateFault)(nil)

// Inject sets the rate. It returns [ErrBadFault] for a rate that is not
// positive and [ErrNoClock] for a node without the shim.
func (f *ClockRateFault) Inject(ctx context.Context, n *Node) error {
	c, err := clockOf(n)
	if err != nil {
		return err
	}
	return c.SetRate(f.Rate)
}

// Heal puts the node's wall clock back on true time at the true rate,
// undoing every clock fault on it (see [Clock.Reset]).
func (f *ClockRateFault) Heal(ctx context.Context, n *Node) error {
	c, err := clockOf(n)
	if err != nil {
		return err
	}
	return c.Reset()
}

// Describe returns e.g. "clock rate ×2".
func (f *ClockRateFault) Describe() string {
	return "clock rate ×" + strconv.FormatFloat(f.Rate, 'g', -1, 64)
}

func init() { RegisterFault("clock-rate", func() Fault { return new(ClockRateFault) }) }
