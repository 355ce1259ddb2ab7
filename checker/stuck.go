package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// A hold is an interval during which some process may have held a lock
// legitimately, and the lease or unknown operation behind it.
type hold struct {
	start, end int64
	l          *lease // nil for an acquire or extend with an unknown outcome
	o          *op
}

// stuckLocks returns a stuck-lock anomaly for every period in which at least
// two acquires of a key failed, none succeeded, no process could have held
// the key, and the last failure came more than StuckAfter after the last
// hold ended.
//
// A process may hold a key from its acquire's invoke until its lease's
// deadline (until its release completes, if that comes first and succeeds;
// leases without a deadline end as their certain window does). An acquire or
// extend whose outcome is unknown may hold the key from its invoke for
// MaxTTL. Failed acquires hold nothing, even if they left a key behind on
// some node: that is what makes a lock stuck.
func (r *run) stuckLocks() []Anomaly {
	if r.opt.StuckAfter < 0 {
		return nil
	}
	ttl := r.maxTTL()
	holds := make(map[string][]hold)
	tries := make(map[string][]*op)
	for _, l := range r.leases {
		holds[l.key] = append(holds[l.key], hold{l.acquire.call, possibleEnd(l), l, l.acquire})
	}
	for i := range r.ops {
		o := &r.ops[i]
		switch {
		case (o.f == FAcquire || o.f == FExtend) && o.typ == Info:
			holds[o.key] = append(holds[o.key], hold{o.call, o.call + ttl, nil, o})
		case o.f == FAcquire && (o.typ == OK || o.typ == Fail):
			tries[o.key] = append(tries[o.key], o)
		}
	}
	var out []Anomaly
	origin, after := int64(r.clock), int64(r.opt.StuckAfter)
	for key, ts := range tries {
		hs := holds[key]
		slices.SortFunc(hs, byHoldStart)
		slices.SortFunc(ts, byRet)
		k := &stuckKey{}
		h := 0
		for _, t := range ts {
			for ; h < len(hs) && hs[h].start <= t.ret; h++ {
				k.absorb(hs[h])
			}
			if sc := k.try(t, ttl, origin, after); sc != nil {
				out = append(out, stuckLock(r.clock, key, *sc))
			}
		}
		if sc := k.flush(false, origin, after); sc != nil {
			out = append(out, stuckLock(r.clock, key, *sc))
		}
	}
	slices.SortFunc(out, byFirstOp)
	return out
}

// A stuckKey runs the stuck-lock rule over the tries of one key, in order
// of completion, as the holds that start before each are absorbed. It keeps
// of the holds only what the rule asks: the lease hold with the latest end
// and the unknown one with the latest start (their ends are start + MaxTTL),
// the first in order of each, so MaxTTL can be given at each try.
type stuckKey struct {
	lease, unknown       hold
	hasLease, hasUnknown bool
	run                  failRun
	since                hold  // the busy hold when the run began
	sinceTTL             int64 // MaxTTL then
	sinceUnknown         int64 // the unknown hold's start then, if any
	sinceHasUnknown      bool

	// What MaxTTL may grow to (a Stream learns it as leases come) without
	// changing any decision so far: at most ttlMax, and exactly every value
	// from eqLo to eqHi when hasEq.
	ttlMax       int64
	eqLo, eqHi   int64
	hasEq, dirty bool
}

// absorb takes h, the next hold in order of start (byHoldStart).
//
// Of equal ends (or starts), the first in order stays, whatever the order
// of absorbing: a [Stream] absorbs the hold of a lease that ended late.
func (k *stuckKey) absorb(h hold) {
	if h.l != nil {
		if !k.hasLease || h.end > k.lease.end || h.end == k.lease.end && byHoldStart(h, k.lease) < 0 {
			k.lease, k.hasLease = h, true
		}
	} else if !k.hasUnknown || h.start > k.unknown.start || h.start == k.unknown.start && byHoldStart(h, k.unknown) < 0 {
		k.unknown, k.hasUnknown = h, true
	}
}

// busy returns the first absorbed hold with the latest end, unknown holds
// lasting ttl.
func (k *stuckKey) busy(ttl int64) hold {
	b := hold{end: math.MinInt64}
	if k.hasLease {
		b = k.lease
	}
	if k.hasUnknown {
		u := k.unknown
		u.end = u.start + ttl
		if !k.hasLease || u.end > b.end || (u.end == b.end && byHoldStart(u, b) < 0) {
			b = u
		}
	}
	return b
}

// try takes t, the next ok or failed acquire in order of completion, and
// returns the run of failures it ends, if that is a stuck lock.
func (k *stuckKey) try(t *op, ttl, origin, after int64) *stuckCase {
	b := k.busy(ttl)
	if t.typ == OK || t.call < b.end {
		return k.flush(true, origin, after)
	}
	if k.hasUnknown {
		k.limit(t.call - k.unknown.start) // a longer MaxTTL would cover t
	}
	if k.run.n == 0 {
		k.since, k.sinceTTL = b, ttl
		k.sinceUnknown, k.sinceHasUnknown = k.unknown.start, k.hasUnknown
	}
	k.run.add(t)
	return nil
}

func (k *stuckKey) limit(ttl int64) {
	if !k.dirty || ttl < k.ttlMax {
		k.ttlMax, k.dirty = ttl, true
	}
}

// flush ends the current run of failures and returns it if it is a stuck
// lock: two or more failures, the last more than after past the end of the
// hold it began under (or the origin).
func (k *stuckKey) flush(recovered bool, origin, after int64) *stuckCase {
	run := k.run
	k.run = failRun{}
	if run.n < 2 {
		return nil
	}
	switch {
	case k.since.l == nil && k.since.o != nil: // its end is start + MaxTTL
		if !k.hasEq {
			k.eqLo, k.eqHi, k.hasEq = k.sinceTTL, k.sinceTTL, true
		}
		k.eqLo, k.eqHi = min(k.eqLo, k.sinceTTL), max(k.eqHi, k.sinceTTL)
	case k.since.l != nil && k.sinceHasUnknown: // the unknown hold must stay shorter
		k.limit(k.since.end - k.sinceUnknown - 1)
	}
	free := max(k.since.end, origin)
	if run.last.ret-free <= after {
		return nil
	}
	return &stuckCase{since: k.since, free: free, run: run, recovered: recovered}
}

// ttlFits reports whether ttl, the final MaxTTL, gives the decisions made so
// far with the MaxTTL known at the time.
func (k *stuckKey) ttlFits(ttl int64) bool {
	return (!k.dirty || ttl <= k.ttlMax) && (!k.hasEq || (k.eqLo == ttl && k.eqHi == ttl))
}

// A stuckCase is a stuck lock: a run of failures, and the hold it began
// under, whose end (or the origin) is free.
type stuckCase struct {
	since     hold
	free      int64
	run       failRun
	recovered bool
}

// A failRun is a run of failed acquires, summed up: how many, by which
// processes, on which nodes, the first and the last, and the first and last
// ten for the evidence.
type failRun struct {
	opTrail
	procs       []int // sorted
	nodes       []string
	first, last *op
}

func (f *failRun) add(t *op) {
	if f.n == 0 {
		f.first = t
	}
	f.opTrail.add(t)
	f.last = t
	if i, found := slices.BinarySearch(f.procs, t.process); !found {
		f.procs = slices.Insert(f.procs, i, t.process)
	}
	if t.node != "" && !contains(f.nodes, t.node) {
		f.nodes = append(f.nodes, t.node)
	}
}

// byHoldStart orders holds by start, then by list position; byRet orders
// operations by completion, then by list position. A [Stream] decides in the
// same order.
func byHoldStart(a, b hold) int {
	return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.o.seq, b.o.seq))
}
func byRet(a, b *op) int { return cmp.Or(cmp.Compare(a.ret, b.ret), cmp.Compare(a.seq, b.seq)) }

// possibleEnd returns the time after which the holder of l can no longer
// hold its key legitimately.
func possibleEnd(l *lease) int64 {
	if l.deadline == math.MaxInt64 {
		if l.release != nil && l.release.completed() {
			return l.release.ret
		}
		return l.end()
	}
	if l.release != nil && l.release.typ == OK {
		return min(l.deadline, l.release.ret)
	}
	return l.deadline
}

// maxTTL returns Options.MaxTTL, or the longest lease observed: its
// acquire's ValidUntil minus its invoke time.
func (r *run) maxTTL() int64 {
	if r.opt.MaxTTL > 0 {
		return int64(r.opt.MaxTTL)
	}
	var ttl int64
	for _, l := range r.leases {
		if vu := l.acquire.validUntil; vu != 0 {
			ttl = max(ttl, vu-l.acquire.call)
		}
	}
	return ttl
}

// stuckLock describes sc, a stuck lock of key, or, if nobody had been
// granted key before it and several processes failed in it, a livelock.
func stuckLock(c clock, key string, sc stuckCase) Anomaly {
	since, free, run := sc.since, sc.free, sc.run
	first, last := run.first, run.last
	a := Anomaly{Kind: StuckLock, Key: key, Processes: slices.Clone(run.procs), Ops: run.indexes(), Nodes: slices.Clone(run.nodes)}
	var holder string
	switch {
	case since.l != nil:
		a.Windows = since.l.spans()
		a.Ops = append(since.l.indexes(), a.Ops...)
		holder = fmt.Sprintf("although the last lease ended at %s (process %d's, granted%s at %s)",
			c.at(free), since.l.process, on(since.l.node), c.at(since.l.start))
	case since.o != nil:
		a.Ops = append(since.o.indexes(), a.Ops...)
		holder = fmt.Sprintf("although the last possible holder could keep it only until %s (process %d's %s with an unknown outcome at %s, for at most %s)",
			c.at(free), since.o.process, since.o.f, c.at(since.o.call), dur(since.end-since.start))
	case len(a.Processes) >= 2:
		// Nobody had held the key yet, and several contenders kept failing:
		// they kept each other out (Redlock's split vote), a livelock,
		// whether or not one of them got through later.
		a.Kind = Starvation
		a.Message = fmt.Sprintf("livelock: no process had been granted lock %q yet: %d acquires by processes %s failed from %s to %s (%s) while no lease was held, each kept out by the others' attempts (or the lock did not work)",
			key, run.n, joinInts(a.Processes), c.at(first.call), c.at(last.ret), dur(last.ret-first.call))
		if last.err != "" {
			a.Message += fmt.Sprintf("; the last failed with %q", last.err)
		}
		return a
	default:
		holder = "although no lease had been granted yet"
	}
	msg := fmt.Sprintf("lock %q stayed unavailable with no live holder for %s: %d acquires by process%s %s failed from %s to %s, %s",
		key, dur(last.ret-free), run.n, plural(len(a.Processes)), joinInts(a.Processes), c.at(first.call), c.at(last.ret), holder)
	if last.err != "" {
		msg += fmt.Sprintf("; the last failed with %q", last.err)
	}
	if !sc.recovered {
		msg += "; it never became available again"
	}
	a.Message = msg
	return a
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}
