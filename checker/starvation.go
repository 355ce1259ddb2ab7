package checker

import (
	"cmp"
	"fmt"
	"slices"
)

// starvations returns a starvation anomaly for every process that tried to
// acquire a key for at least StarveAfter without being granted it, while
// other processes were granted it.
//
// A process's failed acquires before its first ok acquire of the key fall
// into runs, split by its acquires whose outcome is unknown: one of those
// may have been granted, so a run never spans one. The first run that
// lasted StarveAfter (from its first invoke to its last completion) while
// others were granted the key, and did not end in an ok acquire, is the
// process's starvation.
func (r *run) starvations() []Anomaly {
	if r.opt.StarveAfter < 0 {
		return nil
	}
	type pk struct {
		process int
		key     string
	}
	tries := make(map[pk][]*op)
	for i := range r.ops {
		if o := &r.ops[i]; o.f == FAcquire {
			tries[pk{o.process, o.key}] = append(tries[pk{o.process, o.key}], o)
		}
	}
	granted := make(map[string][]*lease)
	for _, l := range r.leases {
		granted[l.key] = append(granted[l.key], l)
	}
	var out []Anomaly
	for k, ts := range tries {
		if a, ok := r.starved(k.process, k.key, ts, granted[k.key]); ok {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Anomaly) int {
		return cmp.Or(byFirstOp(a, b), cmp.Compare(a.Processes[0], b.Processes[0]))
	})
	return out
}

// starved returns the starvation of process p on key, whose acquires of it
// are ts, if one of its runs of failures starved while granted were the
// key's leases.
func (r *run) starved(p int, key string, ts []*op, granted []*lease) (Anomaly, bool) {
	var failed []*op
	var after *op // the unknown acquire before the run
	for _, t := range ts {
		switch t.typ {
		case OK: // granted at last: the run did not starve
			return Anomaly{}, false
		case Info:
			if a, ok := r.starvedRun(p, key, failed, after, granted); ok {
				return a, true
			}
			failed, after = nil, t
		default:
			failed = append(failed, t)
		}
	}
	return r.starvedRun(p, key, failed, after, granted)
}

// starvedRun returns the starvation of process p if its run of failures
// lasted StarveAfter while others were granted the key.
func (r *run) starvedRun(p int, key string, failed []*op, after *op, granted []*lease) (Anomaly, bool) {
	if len(failed) == 0 {
		return Anomaly{}, false
	}
	first, last := failed[0], failed[len(failed)-1]
	if last.ret-first.call < int64(r.opt.StarveAfter) {
		return Anomaly{}, false
	}
	var others []int
	n := 0
	for _, l := range granted {
		if l.process != p && l.acquire.call >= first.call && l.start <= last.ret {
			n++
			if !slices.Contains(others, l.process) {
				others = append(others, l.process)
			}
		}
	}
	if n == 0 {
		return Anomaly{}, false
	}
	return starvation(r.clock, p, key, len(failed), first, last, after, others, n), true
}

// starvation describes process p's n failed acquires of key, from first to
// last (after an acquire whose outcome is unknown, or nil), while others
// were granted it granted times.
func starvation(c clock, p int, key string, n int, first, last, after *op, others []int, granted int) Anomaly {
	others = slices.Sorted(slices.Values(others))
	who := fmt.Sprintf("process %d never acquired lock %q", p, key)
	if after != nil {
		who = fmt.Sprintf("process %d was not granted lock %q after its acquire at %s whose outcome is unknown", p, key, c.at(after.call))
	}
	msg := fmt.Sprintf("%s: %s from %s to %s failed, while process%s %s %s granted it %d times",
		who, attempts(n), c.at(first.call), c.at(last.ret), plural(len(others)), joinInts(others), was(len(others)), granted)
	if last.err != "" {
		msg += fmt.Sprintf("; the last failed with %q", last.err)
	}
	return Anomaly{Kind: Starvation, Key: key, Processes: []int{p}, Ops: opsOf(first, last), Message: msg}
}

func was(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func attempts(n int) string {
	if n == 1 {
		return "its only attempt"
	}
	return fmt.Sprintf("all its %d attempts", n)
}

// opsOf returns the history indexes of the distinct operations os.
func opsOf(os ...*op) []int {
	var ix []int
	for i, o := range os {
		if i == 0 || o != os[i-1] {
			ix = append(ix, o.indexes()...)
		}
	}
	return ix
}
