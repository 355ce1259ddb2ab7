package checker

import (
	"cmp"
	"slices"
	"time"
)

// Margins says how close a history came to a double grant or a stale act,
// by the lease rules of [Check]. It is no verdict: a search steers by it
// toward the schedules that came closest.
type Margins struct {
	// Takeover is the shortest time from the end of one process's certain
	// ownership of a key to the grant of that key to another process while
	// the first had not released it (its lease expired, was lost, or
	// overlapped: then it is negative). Takeovers counts those grants;
	// Takeover is 0 without one. A grant after a release is no takeover.
	Takeover  time.Duration
	Takeovers int
	// Late counts the writes and releases a holder invoked after its lease
	// had expired by its own deadline or had been reported lost.
	Late int
	// Slack is the least time a holder had left on its lease when it
	// invoked a write or release in time, of the InTime such acts (0
	// without one): how near a holder came to acting late.
	Slack  time.Duration
	InTime int
}

// MarginsOf measures h's margins (see [Margins]).
func MarginsOf(h History) Margins {
	list, _ := ops(h)
	ls := leases(list)
	m := Margins{}
	takeovers(ls, &m)
	lateActs(list, ls, &m)
	return m
}

// takeovers sets m's Takeover and Takeovers: per key, each lease's grant
// is compared with the latest end of the earlier-granted leases of other
// processes that were not released by then.
func takeovers(ls []*lease, m *Margins) {
	byKey := map[string][]*lease{}
	for _, l := range ls {
		if len(l.windows) > 0 {
			byKey[l.key] = append(byKey[l.key], l)
		}
	}
	for _, keyed := range byKey {
		slices.SortStableFunc(keyed, func(a, b *lease) int { return cmp.Compare(a.start, b.start) })
		for i, l := range keyed {
			latest, taken := int64(0), false
			for _, k := range keyed[:i] {
				if k.process != l.process && (k.release == nil || k.release.call > l.start) && (!taken || k.end() > latest) {
					latest, taken = k.end(), true
				}
			}
			if !taken {
				continue
			}
			if gap := time.Duration(l.start - latest); m.Takeovers == 0 || gap < m.Takeover {
				m.Takeover = gap
			}
			m.Takeovers++
		}
	}
}

// lateActs sets m's Late, the writes and releases invoked under a lease
// after its expiry (see expiry), and Slack and InTime, of those before it.
func lateActs(list []op, ls []*lease, m *Margins) {
	byProc := map[int][]*lease{}
	for _, l := range ls {
		byProc[l.process] = append(byProc[l.process], l)
	}
	for i := range list {
		o := &list[i]
		if o.f != FWrite && o.f != FRelease {
			continue
		}
		l := leaseAt(byProc[o.process], o)
		switch {
		case l == nil:
		case o.call > expiry(l):
			m.Late++
		default:
			if left := time.Duration(expiry(l) - o.call); m.InTime == 0 || left < m.Slack {
				m.Slack = left
			}
			m.InTime++
		}
	}
}

// leaseAt returns the lease of mine that o was invoked under: the one with
// its grant number, else the latest granted before o and not closed before
// it (a release closes its own lease at its invoke).
func leaseAt(mine []*lease, o *op) *lease {
	var at *lease
	for _, l := range mine {
		if o.f == FRelease && l.key != o.key {
			continue
		}
		if l.grant != 0 && o.grant != 0 {
			if l.grant == o.grant {
				return l
			}
			continue
		}
		if l.start <= o.call && l.closedAt >= o.call {
			at = l
		}
	}
	return at
}

// expiry is when l's holder should know its lease is gone: its deadline,
// or the lost notification, whichever came first.
func expiry(l *lease) int64 {
	e := l.deadline
	if l.lost != nil {
		e = min(e, l.lost.call)
	}
	return e
}
