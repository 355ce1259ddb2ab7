package checker

import (
	"math"
	"slices"
	"sort"
)

// The rules of a Stream, applied as far as the horizon allows; see the
// block comment in stream.go.

// advance decides what the horizon allows, and lets go of what no event to
// come can change.
func (s *Stream) advance() {
	s.pending = 0
	if !s.ended && s.watermark() < s.origin {
		return // an event to come may still move the origin (reorder.go)
	}
	s.counters()
	h := int64(math.MaxInt64)
	if !s.ended {
		h = s.watermark()
		for _, p := range s.procs {
			for _, o := range p.queue[p.head:] {
				h = min(h, o.call)
			}
		}
	}
	for _, k := range s.keys {
		s.sweep(k, h)
		if s.opt.StuckAfter >= 0 {
			s.decide(k, h)
		}
		s.decideEnded(k, h)
		k.recent = slices.DeleteFunc(k.recent, func(l *lease) bool { return l.acquire.call < h })
	}
	s.judge(h)
	s.emit()
	s.forget(h)
}

// sweep sweeps the windows of k that start before h (and before any lease
// without a deadline was last seen: one may be cut there at the end), as
// doubleGrants does.
func (s *Stream) sweep(k *lockKey, h int64) {
	for _, l := range k.open {
		if l.deadline == math.MaxInt64 {
			h = min(h, l.lastSeen)
		}
	}
	todo := s.todo[:0]
	keep := k.sweep[:0]
	for _, l := range k.sweep {
		i := l.swept
		for ; i < len(l.windows) && l.windows[i].start < h; i++ {
			todo = append(todo, sweepWin{l, i, l.windows[i].start})
		}
		l.swept = i
		if !s.ended && (l.closedAt == math.MaxInt64 || i < len(l.windows)) {
			keep = append(keep, l)
		}
	}
	clear(k.sweep[len(keep):])
	k.sweep = keep
	slices.SortFunc(todo, func(a, b sweepWin) int {
		return byStart(win{a.l, span{start: a.start}}, win{b.l, span{start: b.start}})
	})
	for _, w := range todo {
		live := k.active[:0]
		for _, a := range k.active {
			if a.end() > w.start {
				live = append(live, a)
			}
		}
		clear(k.active[len(live):])
		k.active = live
		for _, a := range k.active {
			if a.l.process == w.l.process || slices.Contains(a.l.pairs, w.l.id) {
				continue
			}
			a.l.pairs = append(a.l.pairs, w.l.id)
			w.l.pairs = append(w.l.pairs, a.l.id)
			s.pairs = append(s.pairs, grantPair{a, w})
		}
		k.active = append(k.active, w)
	}
	clear(todo)
	s.todo = todo[:0]
	k.active = slices.DeleteFunc(k.active, func(a sweepWin) bool { return a.end() < h })
}

// decide decides the tries of k that completed before h, as stuckLocks
// does. A lease of k still held at h with a deadline at or after h ends
// after every such try was invoked (a release to come completes after h),
// so a try that completed after its acquire's invoke finds the key busy:
// it ends any run of failures, whatever the lease's end turns out to be,
// and the lease's hold is absorbed when it ends. A lease whose deadline is
// before h, never released (a holder that crashed), ends at that deadline.
// Both hold unless a renewal moves the deadline, which leaseEnded checks.
// A lease without a deadline holds back the tries after its acquire.
func (s *Stream) decide(k *lockKey, h int64) {
	under := int64(math.MaxInt64)
	var held *lease // the lease held at h granted first
	for _, l := range k.open {
		switch {
		case l.held:
		case l.deadline == math.MaxInt64:
			h = min(h, l.acquire.call)
		case l.deadline < h:
			l.held, l.heldEnd = true, possibleEnd(l)
			k.holds = insertBy(k.holds, hold{l.acquire.call, l.heldEnd, l, l.acquire}, byHoldStart)
		case l.acquire.call < under:
			under, held = l.acquire.call, l
		}
	}
	later := k.later
	k.later = nil
	for _, sc := range later {
		s.stuckFound(k, sc)
	}
	i, j := 0, 0
	after := int64(s.opt.StuckAfter)
	for ; i < len(k.tries) && k.tries[i].ret < h; i++ {
		t := k.tries[i]
		for ; j < len(k.holds) && k.holds[j].start <= t.ret; j++ {
			k.stuck.absorb(k.holds[j])
		}
		sc := (*stuckCase)(nil)
		if t.ret >= under {
			held.busyUntil, held.busy = max(held.busyUntil, t.call), true
			sc = k.stuck.flush(true, s.origin, after)
		} else {
			sc = k.stuck.try(t, s.ttl, s.origin, after)
		}
		if sc != nil {
			s.stuckFound(k, *sc)
		}
	}
	k.tries = slices.Delete(k.tries, 0, i)
	k.holds = slices.Delete(k.holds, 0, j)
}

// leaseEnded gives the stuck-lock rule the hold of l, a lease of k that
// ended (or the history did), unless decide gave it already; then its end
// must not have moved since a try saw it. Tries decided busy under l must
// have been invoked before its end.
func (s *Stream) leaseEnded(k *lockKey, l *lease) {
	end := possibleEnd(l)
	switch {
	case !l.held:
		k.holds = insertBy(k.holds, hold{l.acquire.call, end, l, l.acquire}, byHoldStart)
	case end == l.heldEnd:
	case slices.ContainsFunc(k.holds, func(x hold) bool { return x.l == l }):
		i := slices.IndexFunc(k.holds, func(x hold) bool { return x.l == l })
		k.holds[i].end = end // no try has seen it yet
	default:
		s.inexact("the lease of process %d on %q was renewed after its deadline had passed", l.process, k.name)
	}
	if l.busy && end <= l.busyUntil {
		s.inexact("the lease of process %d on %q was cut short by a renewal", l.process, k.name)
	}
}

// insertBy inserts x into xs, sorted by cmp, from the back: what comes
// nearly in order costs as far as it is late.
func insertBy[T any](xs []T, x T, cmp func(a, b T) int) []T {
	xs = append(xs, x)
	i := len(xs) - 1
	for ; i > 0 && cmp(x, xs[i-1]) < 0; i-- {
		xs[i] = xs[i-1]
	}
	xs[i] = x
	return xs
}

// stuckFound reports sc, or keeps it until the lease it began under ends.
func (s *Stream) stuckFound(k *lockKey, sc stuckCase) {
	if l := sc.since.l; l != nil && l.closedAt == math.MaxInt64 && !s.ended {
		k.later = append(k.later, sc) // its release, still to come, is evidence
		return
	}
	s.found = append(s.found, stuckLock(s.clock(), k.name, sc))
}

// tried applies the starvation rule to o, the next acquire of its process:
// an ok acquire settles the process, an unknown one ends its run of
// failures, a failure starts or lengthens one.
func (s *Stream) tried(k *lockKey, o *sop) {
	if k.settled[o.process] {
		return
	}
	st := k.starve[o.process]
	switch {
	case o.typ == OK:
		delete(k.starve, o.process)
		k.settled[o.process] = true
	case o.typ == Info:
		if st != nil && st.first != nil {
			st.frozen = true
			k.ended = append(k.ended, st)
		}
		k.starve[o.process] = &starver{process: o.process, after: &o.op}
	case st == nil || st.first == nil:
		st = &starver{process: o.process, n: 1, first: &o.op, last: &o.op, after: st.unknown()}
		k.starve[o.process] = st
		for _, l := range k.recent {
			st.grant(l)
		}
	default:
		st.n++
		st.last = &o.op
		later := st.later
		st.later = nil
		for _, l := range later {
			st.grant(l)
		}
	}
}

// unknown returns the unknown acquire a run follows, or nil.
func (st *starver) unknown() *op {
	if st == nil {
		return nil
	}
	return st.after
}

// grant counts l if it was granted to another process while st failed.
func (st *starver) grant(l *lease) {
	if st.first == nil || l.process == st.process || l.acquire.call < st.first.call {
		return
	}
	if l.start > st.last.ret {
		if !st.frozen {
			st.later = append(st.later, l)
		}
		return
	}
	st.granted++
	if !slices.Contains(st.others, l.process) {
		st.others = append(st.others, l.process)
	}
}

// decideEnded decides the ended runs of k whose last failure completed
// before h: no lease to come can start before it.
func (s *Stream) decideEnded(k *lockKey, h int64) {
	var due []*starver
	k.ended = slices.DeleteFunc(k.ended, func(st *starver) bool {
		if st.last.ret < h {
			due = append(due, st)
			return true
		}
		return false
	})
	for _, st := range due {
		s.decideRun(k, st)
	}
}

// decideRun reports st if it starved and its process has not starved
// before; a process starves once: its later runs are dropped.
func (s *Stream) decideRun(k *lockKey, st *starver) {
	if st.first == nil || k.starved[st.process] ||
		st.last.ret-st.first.call < int64(s.opt.StarveAfter) || st.granted == 0 {
		return
	}
	k.starved[st.process] = true
	k.settled[st.process] = true
	delete(k.starve, st.process)
	s.found = append(s.found, starvation(s.clock(), st.process, k.name, st.n, st.first, st.last, st.after, st.others, st.granted))
}

// judge judges the writes invoked before h, as staleWrites does.
func (s *Stream) judge(h int64) {
	keep := s.writes[:0]
	for _, w := range s.writes {
		mine := s.procs[w.process].leases
		if !s.ended && w.call >= h {
			keep = append(keep, w)
			continue
		}
		if l := holding(mine, &w.op); l != nil && !s.ended && l.closedAt == math.MaxInt64 && l.deadline == math.MaxInt64 {
			keep = append(keep, w) // it may still be cut where its holder was last seen
			continue
		}
		sc, report := judgeWrite(&w.op, mine, func(key string) []*lease { return s.keys[key].byStart },
			func() bool { return w.hasFence && w.fenceBefore.V > w.fence })
		if report {
			s.stales = append(s.stales, sc)
		}
	}
	clear(s.writes[len(keep):])
	s.writes = keep
}

// emit reports the double grants (and shared tokens) and stale writes
// whose leases have ended.
func (s *Stream) emit() {
	ended := func(l *lease) bool { return l == nil || s.ended || l.closedAt != math.MaxInt64 }
	pairs := s.pairs[:0]
	for _, p := range s.pairs {
		if !ended(p.a.l) || !ended(p.b.l) {
			pairs = append(pairs, p)
			continue
		}
		s.found = append(s.found, overlap(p.a.l, p.a.l.windows[p.a.i], p.b.l, p.b.l.windows[p.b.i], s.clock())...)
	}
	clear(s.pairs[len(pairs):])
	s.pairs = pairs
	stales := s.stales[:0]
	for _, sc := range s.stales {
		switch {
		case !ended(sc.l) || !ended(sc.m):
			stales = append(stales, sc)
		case sc.fenced:
			s.saved = append(s.saved, staleFound{sc.w.seq, staleWrite(s.clock(), sc)})
		default:
			s.found = append(s.found, staleWrite(s.clock(), sc))
		}
	}
	clear(s.stales[len(stales):])
	s.stales = stales
}

// forget lets go of the leases no write to come can name: those that
// ended before h and before every write still to judge, and, of a key's
// leases that start before h, all but the successors a lease its holder
// may still write under can name (see pin).
func (s *Stream) forget(h int64) {
	floor := h
	for _, w := range s.writes {
		floor = min(floor, w.call)
	}
	pins := s.pins[:0]
	low := make(map[string]int64) // key -> where a lease without deadline may yet be cut
	for _, p := range s.procs {
		p.leases = slices.DeleteFunc(p.leases, func(l *lease) bool { return l.closedAt <= floor })
		for _, l := range p.leases {
			pins = s.pin(pins, l, h)
			if l.deadline == math.MaxInt64 && l.closedAt == math.MaxInt64 {
				if v, ok := low[l.key]; !ok || l.lastSeen < v {
					low[l.key] = l.lastSeen // lb.finish cuts it there: a window end to come
				}
			}
		}
	}
	for _, m := range pins {
		m.pinned = true
	}
	for _, k := range s.keys {
		cut := h
		if v, ok := low[k.name]; ok {
			cut = min(cut, v)
		}
		n := 0
		for n < len(k.byStart) && k.byStart[n].start < cut {
			n++
		}
		keep := k.byStart[:0]
		for i, m := range k.byStart {
			if i >= n || m.pinned {
				keep = append(keep, m)
			}
		}
		clear(k.byStart[len(keep):])
		k.byStart = keep
	}
	for _, m := range pins {
		m.pinned = false
	}
	clear(pins)
	s.pins = pins[:0]
}

// pin adds to pins the leases of l's key that start before h and that
// successor may return for l, whatever the write: the first of another
// process granted after l, and the first granted at or after the end of each
// window of l that ends before h (l's expiry for a write to come is one of
// those ends, or later than h).
func (s *Stream) pin(pins []*lease, l *lease, h int64) []*lease {
	ls := s.keys[l.key].byStart
	first := func(i int) []*lease {
		for ; i < len(ls) && ls[i].start < h; i++ {
			if m := ls[i]; m.process != l.process {
				return append(pins, m)
			}
		}
		return pins
	}
	pins = first(sort.Search(len(ls), func(i int) bool { return ls[i].start > l.start }))
	for _, w := range l.windows {
		if w.end < h {
			pins = first(sort.Search(len(ls), func(i int) bool { return ls[i].start >= w.end }))
		}
	}
	return pins
}
