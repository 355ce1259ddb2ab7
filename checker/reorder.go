package checker

import "container/heap"

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
// time order is the counter rule (maxBefore needs completions in order of
// time): its invokes and completions wait in a heap, by time, until the
// watermark passes them. The origin of the clock, the earliest time, is
// known once the watermark reaches it, so nothing is decided before.

// A ctrEvent is the invoke (done false) or the end of a read or write, for
// the counter rule, at time t; seq keeps the order of arrival among equal
// times, so an operation's invoke comes before its end.
type ctrEvent struct {
	t    int64
	seq  int
	done bool
	o    *sop
}

type ctrQueue []ctrEvent

func (q ctrQueue) Len() int { return len(q) }
func (q ctrQueue) Less(i, j int) bool {
	return q[i].t < q[j].t || q[i].t == q[j].t && q[i].seq < q[j].seq
}
func (q ctrQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *ctrQueue) Push(x any)   { *q = append(*q, x.(ctrEvent)) }
func (q *ctrQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = ctrEvent{}
	*q = old[:len(old)-1]
	return x
}

// watermark returns the time at or after which every event to come is.
func (s *Stream) watermark() int64 { return s.last - s.window }

// toCounter queues o's invoke (done false) or end for the counter rule, at
// time t, no earlier than its invoke.
func (s *Stream) toCounter(t int64, o *sop, done bool) {
	heap.Push(&s.ctrq, ctrEvent{t: t, seq: s.ctrSeq, done: done, o: o})
	s.ctrSeq++
}

// counters gives the counter rule, in time order, what is before the
// watermark (everything, once the history has ended).
func (s *Stream) counters() {
	w := s.watermark()
	for len(s.ctrq) > 0 && (s.ended || s.ctrq[0].t < w) {
		e := heap.Pop(&s.ctrq).(ctrEvent)
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
}
