package trial

import (
	"time"

	"golang.org/x/sys/unix"
)

// monoNow reads CLOCK_MONOTONIC in nanoseconds: the time base of every event,
// shared by all processes on this host.
func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// A monoClock converts a client's time.Time readings to CLOCK_MONOTONIC
// nanoseconds. skew is how far the client's clock is ahead of the host's,
// so a deadline read off a skewed clock lands at the real time it means.
type monoClock struct {
	base     time.Time
	baseMono int64
	skew     time.Duration
}

func newMonoClock(skew time.Duration) *monoClock {
	return &monoClock{base: time.Now(), baseMono: monoNow(), skew: skew}
}

func (c *monoClock) at(t time.Time) int64 { return c.baseMono + int64(t.Sub(c.base)-c.skew) }
