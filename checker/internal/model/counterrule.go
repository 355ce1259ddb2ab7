package model

import "slices"

// The counter rule: what the counter model's search decides, without the
// search. checker's Stream uses it, since a search needs the whole history.
//
// Writes only increment, so a linearization has one order of values: the
// write of v, then the reads of v, then the write of v+1. Call that an
// operation's place. The counter starts at the lowest value any ok read or
// write shows (a lower start only adds writes to place), and ends at the
// highest. The history is linearizable exactly when
//
//   - no two ok writes wrote one value (checker's Check reports those
//     directly);
//   - every value between the lowest and the highest has an ok write, or a
//     write with an unknown outcome that may supply it: one that no
//     operation with a later place had completed before it was invoked
//     (it has no completion, so nothing constrains it later);
//   - no ok read or write was invoked after an operation with a later
//     place had completed (that operation would have to come first).
//
// Those orders exist then: place each value's write, then its reads in
// any order that respects real time, and every other unknown write at the
// end, where it changes nothing. And each rule states a constraint that
// every linearization obeys. Real time follows porcupine: an operation
// precedes another only if it returned strictly before the other's call.
// checker's counterrule_test.go checks the rule against the model's search.

// A Place is where an operation stands in the only order of a counter's
// linearization: the write of V, then the reads of V.
type Place struct {
	V    int64
	Read bool
}

// Less reports whether p comes before q in that order.
func (p Place) Less(q Place) bool { return p.V < q.V || (p.V == q.V && !p.Read && q.Read) }

// A MaxBefore is the latest place among those added at non-decreasing
// times, as it was before a given time.
type MaxBefore struct {
	at        int64 // time of the last addition
	prev, all Place // the maximum before at, and with the additions at at
	hasPrev   bool
	hasAll    bool
}

// Add adds p at time t, no earlier than any addition before.
func (m *MaxBefore) Add(t int64, p Place) {
	if !m.hasAll || t > m.at {
		m.prev, m.hasPrev, m.at = m.all, m.hasAll, t
	}
	if !m.hasAll || m.all.Less(p) {
		m.all, m.hasAll = p, true
	}
}

// Get returns the maximum of the places added strictly before t, which is
// no earlier than any addition, and whether there is one.
func (m *MaxBefore) Get(t int64) (Place, bool) {
	if m.hasAll && t > m.at {
		return m.all, true
	}
	return m.prev, m.hasPrev
}

// A ValueSet is a set of integers, as sorted, disjoint, non-adjacent
// ranges: a counter's written values form one or a few.
type ValueSet []valueRange

type valueRange struct{ lo, hi int64 }

// Add adds v and reports whether it was absent.
func (s *ValueSet) Add(v int64) bool {
	r := *s
	i, _ := slices.BinarySearchFunc(r, v, func(x valueRange, v int64) int {
		switch {
		case x.hi < v:
			return -1
		case x.lo > v:
			return 1
		}
		return 0
	})
	if i < len(r) && r[i].lo <= v && v <= r[i].hi {
		return false
	}
	joinLeft := i > 0 && r[i-1].hi == v-1
	joinRight := i < len(r) && r[i].lo == v+1
	switch {
	case joinLeft && joinRight:
		r[i-1].hi = r[i].hi
		r = slices.Delete(r, i, i+1)
	case joinLeft:
		r[i-1].hi = v
	case joinRight:
		r[i].lo = v
	default:
		r = slices.Insert(r, i, valueRange{v, v})
	}
	*s = r
	return true
}

// DropBelow removes the values below v.
func (s *ValueSet) DropBelow(v int64) {
	r := *s
	i := 0
	for i < len(r) && r[i].hi < v {
		i++
	}
	if i < len(r) {
		r[i].lo = max(r[i].lo, v)
	}
	n := copy(r, r[i:])
	clear(r[n:])
	*s = r[:n]
}

// FirstGap returns the first value from lo to hi in neither a nor b, and
// whether there is one.
func FirstGap(a, b ValueSet, lo, hi int64) (int64, bool) {
	all := slices.SortedFunc(slices.Values(append(slices.Clone(a), b...)), func(x, y valueRange) int {
		switch {
		case x.lo < y.lo:
			return -1
		case x.lo > y.lo:
			return 1
		}
		return 0
	})
	cur := lo
	for _, r := range all {
		if cur > hi {
			return 0, false
		}
		if r.lo > cur {
			return cur, true
		}
		if r.hi >= hi {
			return 0, false
		}
		cur = max(cur, r.hi+1)
	}
	return cur, cur <= hi
}
