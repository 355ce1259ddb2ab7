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
	for key, ts := range tries {
		hs := holds[key]
		slices.SortFunc(hs, func(a, b hold) int { return cmp.Compare(a.start, b.start) })
		slices.SortFunc(ts, func(a, b *op) int { return cmp.Compare(a.ret, b.ret) })
		busy := hold{end: math.MinInt64}
		var failed []*op
		var since hold
		flush := func(recovered bool) {
			if len(failed) >= 2 {
				free := max(since.end, int64(r.clock))
				if last := failed[len(failed)-1]; last.ret-free > int64(r.opt.StuckAfter) {
					out = append(out, r.stuckLock(key, since, free, failed, recovered))
				}
			}
			failed = nil
		}
		h := 0
		for _, t := range ts {
			for ; h < len(hs) && hs[h].start <= t.ret; h++ {
				if hs[h].end > busy.end {
					busy = hs[h]
				}
			}
			switch {
			case t.typ == OK || t.call < busy.end:
				flush(true)
			default:
				if len(failed) == 0 {
					since = busy
				}
				failed = append(failed, t)
			}
		}
		flush(false)
	}
	slices.SortFunc(out, byFirstOp)
	return out
}

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

func (r *run) stuckLock(key string, since hold, free int64, failed []*op, recovered bool) Anomaly {
	c := r.clock
	first, last := failed[0], failed[len(failed)-1]
	a := Anomaly{Kind: StuckLock, Key: key}
	for i, f := range failed {
		if !slices.Contains(a.Processes, f.process) {
			a.Processes = append(a.Processes, f.process)
		}
		if i < 10 || i >= len(failed)-10 {
			a.Ops = append(a.Ops, f.indexes()...)
		}
		a.Nodes = nodes(append(a.Nodes, f.node)...)
	}
	slices.Sort(a.Processes)
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
	case len(a.Processes) >= 2 && len(r.leasesOf(key)) == 0:
		// Nobody ever held the key, yet several contenders kept failing:
		// they kept each other out (Redlock's split vote), a livelock.
		a.Kind = Starvation
		a.Message = fmt.Sprintf("livelock: no process was ever granted lock %q: %d acquires by processes %s failed from %s to %s (%s) while no lease was held, each kept out by the others' attempts (or the lock never worked at all)",
			key, len(failed), joinInts(a.Processes), c.at(first.call), c.at(last.ret), dur(last.ret-first.call))
		if last.err != "" {
			a.Message += fmt.Sprintf("; the last failed with %q", last.err)
		}
		return a
	default:
		holder = "although no lease was ever granted"
	}
	msg := fmt.Sprintf("lock %q stayed unavailable with no live holder for %s: %d acquires by process%s %s failed from %s to %s, %s",
		key, dur(last.ret-free), len(failed), plural(len(a.Processes)), joinInts(a.Processes), c.at(first.call), c.at(last.ret), holder)
	if last.err != "" {
		msg += fmt.Sprintf("; the last failed with %q", last.err)
	}
	if !recovered {
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

// leasesOf returns the leases of key.
func (r *run) leasesOf(key string) []*lease {
	var out []*lease
	for _, l := range r.leases {
		if l.key == key {
			out = append(out, l)
		}
	}
	return out
}
