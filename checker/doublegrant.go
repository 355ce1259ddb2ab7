package checker

import (
	"cmp"
	"fmt"
	"slices"
)

// doubleGrants returns a double-grant anomaly for every pair of leases on
// one key, held by different processes, whose certain windows overlap by
// more than zero, and a shared-token one beside it if both leases have one
// token. It sweeps the windows of each key in order of start, so a history
// without overlaps costs O(n log n).
func doubleGrants(ls []*lease, c clock) []Anomaly {
	byKey := make(map[string][]win)
	for _, l := range ls {
		for _, s := range l.windows {
			byKey[l.key] = append(byKey[l.key], win{l, s})
		}
	}
	var out []Anomaly
	seen := make(map[[2]int]bool)
	for _, ws := range byKey {
		slices.SortFunc(ws, byStart)
		var active []win
		for _, w := range ws {
			live := active[:0]
			for _, a := range active {
				if a.end > w.start {
					live = append(live, a)
				}
			}
			active = live
			for _, a := range active {
				if a.l.process == w.l.process {
					continue
				}
				pair := [2]int{min(a.l.id, w.l.id), max(a.l.id, w.l.id)}
				if seen[pair] {
					continue
				}
				seen[pair] = true
				out = append(out, overlap(a.l, a.span, w.l, w.span, c)...)
			}
			active = append(active, w)
		}
	}
	slices.SortFunc(out, byFirstOp)
	return out
}

// overlap returns the anomalies of the overlap of window aw of lease a with
// window bw of lease b, of another process, where aw starts first: a double
// grant, and a shared token if a and b have one.
func overlap(a *lease, aw span, b *lease, bw span, c clock) []Anomaly {
	out := []Anomaly{doubleGrant(a, aw, b, bw, c)}
	if a.token != "" && a.token == b.token {
		out = append(out, sharedToken(a, b, bw, c))
	}
	return out
}

// doubleGrant describes the overlap of window aw of lease a with window bw
// of lease b, where aw starts first.
func doubleGrant(a *lease, aw span, b *lease, bw span, c clock) Anomaly {
	overlap := min(aw.end, bw.end) - bw.start
	what := "was granted"
	if bw.by != b.acquire {
		what = "extended its lease on"
	}
	var msg string
	if bw.by.call >= aw.start {
		// b's grant or extension certainly happened inside aw.
		msg = fmt.Sprintf("process %d %s lock %q%s at %s while process %d held it (granted%s at %s, %s); leases overlapped for %s",
			b.process, what, b.key, on(bw.by.node), c.at(bw.start), a.process, on(a.node), c.at(a.start), ending(a, c), dur(overlap))
	} else {
		msg = fmt.Sprintf("processes %d and %d held lock %q at once: process %d was granted it%s by %s (%s) and process %d%s by %s (%s); leases overlapped for %s",
			a.process, b.process, a.key, a.process, on(a.node), c.at(a.start), ending(a, c),
			b.process, on(b.node), c.at(b.start), ending(b, c), dur(overlap))
	}
	return Anomaly{
		Kind:      DoubleGrant,
		Key:       a.key,
		Processes: []int{a.process, b.process},
		Ops:       append(a.indexes(), b.indexes()...),
		Windows:   append(a.spans(), b.spans()...),
		Nodes:     nodes(a.node, b.node),
		Message:   msg,
	}
}

// sharedToken describes leases a and b, of two processes, that were valid
// at once with one token, where window bw of b starts inside one of a.
func sharedToken(a, b *lease, bw span, c clock) Anomaly {
	what := ""
	if bw.by != b.acquire {
		what = " by a renewal"
	}
	return Anomaly{
		Kind:      SharedToken,
		Key:       a.key,
		Processes: []int{a.process, b.process},
		Ops:       append(a.indexes(), b.indexes()...),
		Windows:   append(a.spans(), b.spans()...),
		Nodes:     nodes(a.node, b.node),
		Message: fmt.Sprintf("processes %d and %d were both handed token %q for lock %q (process %d%s at %s while process %d held it): "+
			"a lock that cannot tell its holders apart lets one holder's release free the other's lock",
			min(a.process, b.process), max(a.process, b.process), a.token, a.key, b.process, what, c.at(bw.start), a.process),
	}
}

// ending returns "valid until +1.950s" or "until its release at +1.950s".
func ending(l *lease, c clock) string {
	if l.endedByRelease() {
		return "until its release at " + c.at(l.end())
	}
	return "valid until " + c.at(l.end())
}

// spans returns the lease's windows as [Window] values.
func (l *lease) spans() []Window {
	ws := make([]Window, len(l.windows))
	for i, s := range l.windows {
		ws[i] = Window{Process: l.process, Start: s.start, End: s.end, Node: l.node, Token: l.token, Fence: l.fence}
	}
	return ws
}

// A win is a window of a lease.
type win struct {
	l *lease
	span
}

// byStart orders windows by start, then by lease (acquire order), so that
// a [Stream] sweeps them in the same order as [Check].
func byStart(a, b win) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.l.id, b.l.id)) }

// byFirstOp orders anomalies by their earliest event, then kind; the rest
// only breaks ties, so the order never depends on how they were found.
func byFirstOp(a, b Anomaly) int {
	if len(a.Ops) == 0 || len(b.Ops) == 0 {
		if c := cmp.Compare(len(a.Ops), len(b.Ops)); c != 0 {
			return c
		}
	} else if c := cmp.Compare(slices.Min(a.Ops), slices.Min(b.Ops)); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), slices.Compare(a.Ops, b.Ops), slices.Compare(a.Processes, b.Processes),
		cmp.Compare(a.Key, b.Key), cmp.Compare(a.Message, b.Message))
}
