package scenarios

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

// A monoClock converts time.Time values (with Go's monotonic reading) to
// CLOCK_MONOTONIC nanoseconds.
type monoClock struct {
	base     time.Time
	baseMono int64
}

func newMonoClock() *monoClock { return &monoClock{base: time.Now(), baseMono: monoNow()} }

func (c *monoClock) at(t time.Time) int64 { return c.baseMono + int64(t.Sub(c.base)) }
