package checker

import "time"

// Options configures [Check]. The zero value, or a nil *Options, means every
// default.
type Options struct {
	// StuckAfter is how long the lock may stay unavailable (acquires
	// failing) after every lease that could hold it has ended before a
	// stuck-lock is reported. -1 disables the stuck-lock check.
	// default: 2s
	StuckAfter time.Duration
	// StarveAfter is how long a process must have tried, and failed, to
	// acquire a key while others were granted it before a starvation is
	// reported. -1 disables the starvation check.
	// default: 2s
	StarveAfter time.Duration
	// MaxTTL bounds how long an acquire or extend with an unknown outcome
	// may keep the lock, for the stuck-lock check.
	// default: the longest lease (ValidUntil minus acquire invoke) observed
	// in the history
	MaxTTL time.Duration
	// Reorder is how far out of time order an event may come to a
	// [Stream]: one earlier than an event added before it by more than
	// this stops the stream with [ErrTimeOrder]. The stream decides that
	// much later, and holds what those decisions need that much longer.
	// -1 allows no disorder. [Check] takes any order and ignores it.
	// default: 1ms (and see [CheckFile])
	Reorder time.Duration
}

const (
	defaultStuckAfter  = 2 * time.Second
	defaultStarveAfter = 2 * time.Second
	defaultReorder     = time.Millisecond
)

// withDefaults returns a copy of o with the zero fields set to defaults.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.StuckAfter == 0 {
		c.StuckAfter = defaultStuckAfter
	}
	if c.StarveAfter == 0 {
		c.StarveAfter = defaultStarveAfter
	}
	switch {
	case c.Reorder == 0:
		c.Reorder = defaultReorder
	case c.Reorder < 0:
		c.Reorder = 0
	}
	return c
}
