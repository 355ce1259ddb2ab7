package checker

// How a Stream takes events out of time order.
//
// A recorder that shares a file with others, or a clock read a moment
// before the line is written, puts some events a little before the line
// above them. A Stream takes them as they come, within a window (Options
// Reorder): the watermark is the latest time added minus the window, an
// event before the watermark is refused (ErrTimeOrder), and so every event
// still to come is at or after it. Everything the stream decides, it
// decides before the horizon, which is now at most the watermark: the rules
// of streamrules.go hold as they are, one window later.
//
// Operations still pair in file order, each process's in its own order,
// and take their list positions in invoke order of the file, as ops does;
// Check orders nothing by time either. The one rule that takes events in
// time order is the counter rule (model.MaxBefore needs completions in
// order of time): its invokes and completions wait in a queue sorted by
// time until the watermark passes them. The origin of the clock, the
// earliest time, is known once the watermark reaches it, so nothing is
// decided before.

// A ctrEvent is the invoke (done false) or the end of a read or write, for
// the counter rule, at time t; seq keeps the order of arrival among equal
// times, so an operation's invoke comes before its end.
type ctrEvent struct {
	t    int64
	seq  int
	done bool
	o    *sop
}

func (a ctrEvent) before(b ctrEvent) bool { return a.t < b.t || a.t == b.t && a.seq < b.seq }

// A ctrQueue holds ctrEvents by time. They come nearly in order, so an
// insertion from the back costs little: as far as the event is late.
type ctrQueue struct {
	q    []ctrEvent
	head int
}

func (c *ctrQueue) push(e ctrEvent) {
	c.q = append(c.q, e)
	for i := len(c.q) - 1; i > c.head && e.before(c.q[i-1]); i-- {
		c.q[i], c.q[i-1] = c.q[i-1], e
	}
}

// next returns the first event if it is before t (or any event if all).
func (c *ctrQueue) next(t int64, all bool) (ctrEvent, bool) {
	if c.head == len(c.q) || !all && c.q[c.head].t >= t {
		return ctrEvent{}, false
	}
	e := c.q[c.head]
	c.q[c.head] = ctrEvent{}
	c.head++
	switch {
	case c.head == len(c.q):
		c.q, c.head = c.q[:0], 0
	case c.head >= 256 && c.head*2 >= len(c.q):
		n := copy(c.q, c.q[c.head:])
		clear(c.q[n:])
		c.q, c.head = c.q[:n], 0
	}
	return e, true
}

func (c *ctrQueue) len() int { return len(c.q) - c.head }

// watermark returns the time at or after which every event to come is.
func (s *Stream) watermark() int64 { return s.last - s.window }

// toCounter queues o's invoke (done false) or end for the counter rule, at
// time t, no earlier than its invoke.
func (s *Stream) toCounter(t int64, o *sop, done bool) {
	s.ctrq.push(ctrEvent{t: t, seq: s.ctrSeq, done: done, o: o})
	s.ctrSeq++
}

// counters gives the counter rule, in time order, what is before the
// watermark (everything, once the history has ended), and lets it forget
// what no event to come can use.
func (s *Stream) counters() {
	w := s.watermark()
	for {
		e, ok := s.ctrq.next(w, s.ended)
		if !ok {
			break
		}
		c := s.counter(e.o.invKey)
		if !e.done {
			c.invoked(e.o)
			continue
		}
		if a := c.completed(e.o, s.clock()); a != nil {
			s.found = append(s.found, *a)
			s.inexact("a lost update on %q: only the whole history explains it", e.o.invKey)
		}
	}
	if !s.ended {
		for _, c := range s.ctrs {
			c.prune(w) // every invoke to come is at or after w
		}
	}
}
