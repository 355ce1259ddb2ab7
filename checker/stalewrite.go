package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// staleWrites returns a stale-write anomaly for every ok write invoked after
// its writer's lease had expired by the writer's own deadline and after
// another process had been granted the same lock, and a prevented one for
// every write the resource rejected by its fencing token (a fail whose error
// contains "fenced").
//
// A write belongs to the lease of its process with its grant number; in a
// history without grant numbers, to the latest lease its process was granted
// before invoking it and had not released, or the one with its token. Only the invoke time is certain to precede the
// write's effect, so a write invoked in time but delayed past the deadline is
// not reported here; the counter model reports the update it loses. Nor
// is a late write presenting a fence before any newer fence reached the
// resource (see newerFenceBefore).
func (r *run) staleWrites() (found, prevented []Anomaly) {
	byProc := make(map[int][]*lease)
	byKey := make(map[string][]*lease)
	for _, l := range r.leases {
		byProc[l.process] = append(byProc[l.process], l)
		byKey[l.key] = append(byKey[l.key], l)
	}
	for _, ls := range byKey {
		slices.SortStableFunc(ls, func(a, b *lease) int { return cmp.Compare(a.start, b.start) })
	}
	for _, ls := range byProc {
		slices.SortStableFunc(ls, func(a, b *lease) int { return cmp.Compare(a.start, b.start) })
	}
	for i := range r.ops {
		w := &r.ops[i]
		if !writeToJudge(w) {
			continue
		}
		sc, report := judgeWrite(w, byProc[w.process], func(key string) []*lease { return byKey[key] },
			func() bool { return r.newerFenceBefore(w) })
		switch {
		case !report:
		case sc.fenced:
			prevented = append(prevented, staleWrite(r.clock, sc))
		default:
			found = append(found, staleWrite(r.clock, sc))
		}
	}
	return found, prevented
}

// writeToJudge reports whether w is a write the stale-write rule looks
// at: an ok write, or one the resource rejected by its fencing token.
func writeToJudge(w *op) bool {
	return w.f == FWrite && (w.typ == OK || fencedWrite(w))
}

func fencedWrite(w *op) bool {
	return w.typ == Fail && strings.Contains(strings.ToLower(w.err), "fenced")
}

// A staleCase is a write judged by the stale-write rule: the lease it was
// written under (l, or nil), whether that had expired and when, and the
// lease of another owner granted after it (m, or nil).
type staleCase struct {
	w         *op
	l, m      *lease
	expired   bool
	expiredAt int64
	fenced    bool
}

// judgeWrite applies the stale-write rule to w (see writeToJudge), given
// mine, the leases of w's process by start, byKey, the leases of a key by
// start, and newerFence, which tells whether the resource had accepted a
// higher fence than w's before w was invoked. It reports whether w is a
// stale write, or a prevented one.
func judgeWrite(w *op, mine []*lease, byKey func(string) []*lease, newerFence func() bool) (sc staleCase, report bool) {
	sc = staleCase{w: w, fenced: fencedWrite(w)}
	if sc.l = holding(mine, w); sc.l != nil {
		var held bool
		sc.expiredAt, held = sc.l.expiry(w.call)
		if sc.expired = !held; sc.expired {
			sc.m = successor(byKey(sc.l.key), sc.l, sc.expiredAt, w.call)
		}
	}
	m := sc.m
	return sc, sc.fenced || (m != nil && (w.fence == 0 || m.fence <= w.fence || newerFence()))
}

// newerFenceBefore reports whether the resource had accepted an operation
// on w's key with a higher fence than w's before w was invoked. A late
// write that presents a fence, while the next holder got a higher one, and
// comes before every newer fence is ordered by its token ahead of the next
// holder's work, which is all fencing promises; whatever it breaks shows in
// the counter model.
func (r *run) newerFenceBefore(w *op) bool {
	for i := range r.ops {
		o := &r.ops[i]
		if o.typ == OK && (o.f == FWrite || o.f == FRead) && o.key == w.key && o.fence > w.fence && o.ret < w.call {
			return true
		}
	}
	return false
}

// holding returns the lease of ls (one process's leases, by start) that w
// was written under, or nil, of those not yet released or superseded when
// w was invoked: the one with w's grant number if w carries one; else the
// one with w's token or fence if w carries one, else the latest.
func holding(ls []*lease, w *op) *lease {
	n, _ := slices.BinarySearchFunc(ls, w.call+1, func(l *lease, t int64) int { return cmp.Compare(l.start, t) })
	var best *lease
	for i := n - 1; i >= 0; i-- {
		l := ls[i]
		if l.closedAt <= w.call {
			continue
		}
		if w.grant != 0 {
			if l.grant == w.grant {
				return l
			}
			continue
		}
		if (w.token != "" && l.token == w.token) || (w.fence != 0 && l.fence == w.fence) {
			return l
		}
		if best == nil {
			best = l
			if w.token == "" && w.fence == 0 {
				return l
			}
		}
	}
	return best
}

// expiry returns the end of the last certain window of l that started at
// or before t (l.start if none), and whether l was certainly held at t.
func (l *lease) expiry(t int64) (end int64, held bool) {
	end = l.start
	for _, s := range l.windows {
		if s.start > t {
			break
		}
		if t < s.end {
			return s.end, true
		}
		end = s.end
	}
	return end, false
}

// successor returns the first lease of ls (one key's leases, by start) held
// by another process and granted after l, before t, preferring one granted
// after l expired at expiredAt. Its token does not matter: a process given
// l's token is another holder all the same.
func successor(ls []*lease, l *lease, expiredAt, t int64) *lease {
	i, _ := slices.BinarySearchFunc(ls, l.start, func(x *lease, s int64) int { return cmp.Compare(x.start, s) })
	var first *lease
	for ; i < len(ls) && ls[i].start <= t; i++ {
		m := ls[i]
		if m.start <= l.start || m.process == l.process {
			continue
		}
		if m.start >= expiredAt {
			return m
		}
		if first == nil {
			first = m
		}
	}
	return first
}

// staleWrite describes sc, once its leases are final.
func staleWrite(c clock, sc staleCase) Anomaly {
	w, l, m, expired, expiredAt, fenced := sc.w, sc.l, sc.m, sc.expired, sc.expiredAt, sc.fenced
	a := Anomaly{Kind: StaleWrite, Key: w.key, Processes: []int{w.process}, Ops: w.indexes(), Prevented: fenced}
	var b strings.Builder
	fmt.Fprintf(&b, "process %d wrote %s to %q at %s", w.process, valueText(w), w.key, c.at(w.call))
	if l != nil {
		a.Key = l.key
		a.Ops = append(a.Ops, l.indexes()...)
		a.Windows = l.spans()
		a.Nodes = nodes(l.node)
		switch {
		case expired && l.lost != nil && l.lost.call == expiredAt:
			fmt.Fprintf(&b, ", %s after it was told its lease on lock %q was lost (granted%s at %s, lost at %s)",
				dur(w.call-expiredAt), l.key, on(l.node), c.at(l.start), c.at(expiredAt))
		case expired:
			fmt.Fprintf(&b, ", %s after its lease on lock %q expired (granted%s at %s, valid until %s)",
				dur(w.call-expiredAt), l.key, on(l.node), c.at(l.start), c.at(expiredAt))
		default:
			fmt.Fprintf(&b, " under its lease on lock %q (granted%s at %s)", l.key, on(l.node), c.at(l.start))
		}
	}
	if m != nil {
		a.Processes = append(a.Processes, m.process)
		a.Ops = append(a.Ops, m.indexes()...)
		a.Windows = append(a.Windows, m.spans()...)
		a.Nodes = nodes(append(a.Nodes, m.node)...)
		fmt.Fprintf(&b, ", after process %d was granted the lock%s at %s", m.process, on(m.node), c.at(m.start))
	}
	if fenced {
		fmt.Fprintf(&b, "; the resource rejected it by its fencing token")
		if w.fence != 0 {
			fmt.Fprintf(&b, " %d", w.fence)
		}
		if m != nil && m.fence != 0 {
			fmt.Fprintf(&b, " (process %d holds %d)", m.process, m.fence)
		}
	}
	a.Message = b.String()
	return a
}

func valueText(o *op) string {
	if o.hasValue {
		return fmt.Sprint(o.value)
	}
	return "a value"
}
