package lockcore

import "time"

// A Clock tells a client the time. Leases compute their validity deadline
// from it, so a skewed Clock models a client whose clock is off.
type Clock interface {
	Now() time.Time
}

// SystemClock is the host clock, with Go's monotonic reading.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// SkewedClock is a clock running Offset ahead of (negative: behind) Base.
type SkewedClock struct {
	Base   Clock
	Offset time.Duration
}

// Now returns Base.Now() plus Offset.
func (c SkewedClock) Now() time.Time { return c.Base.Now().Add(c.Offset) }
