package checker

import (
	"bytes"
	"sync"
	_ "unsafe" // for go:linkname
)

// nanotime is the runtime's monotonic clock: CLOCK_MONOTONIC on Linux, read
// through the vDSO. time.Since cannot be used, because events recorded by
// different worker processes must share one time base.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now returns the current CLOCK_MONOTONIC time in nanoseconds on Linux (the
// runtime's monotonic clock elsewhere). Values are comparable across
// processes on one host; they are the default clock of a [Recorder].
func Now() int64 { return nanotime() }

// A Recorder collects the events of one trial. It is safe for concurrent use
// by the workers and the nemesis.
type Recorder struct {
	mu     sync.Mutex
	clock  func() int64
	events History
}

// NewRecorder returns an empty Recorder that stamps events with clock, which
// returns monotonic nanoseconds. A nil clock means [Now].
func NewRecorder(clock func() int64) *Recorder {
	if clock == nil {
		clock = Now
	}
	return &Recorder{clock: clock}
}

// Record sets e.Index to the next position in the history and, if e.Time is
// zero, e.Time to the clock's current time, then appends e and returns the
// stored event. Times read by Record never decrease along the history, since
// the clock is read under the recorder's lock.
func (r *Recorder) Record(e Event) Event {
	e.Value = bytes.Clone(e.Value)
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Index = len(r.events)
	if e.Time == 0 {
		e.Time = r.clock()
	}
	r.events = append(r.events, e)
	return e
}

// History returns a copy of the events recorded so far.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := make(History, len(r.events))
	copy(h, r.events)
	return h
}

// Len returns the number of events recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}
