package checker

import (
	"cmp"
	"fmt"
	"slices"
)

// starvations returns a starvation anomaly for every process that tried to
// acquire a key for at least StarveAfter, from its first acquire's invoke to
// its last failed acquire's completion, without ever being granted it, while
// other processes were granted it.
//
// An acquire whose outcome is unknown may have been granted, so only the
// failures before a process's first unknown acquire count, and a process
// with an ok acquire of the key is never reported.
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
		var failed []*op
		ok := false
		for _, t := range ts {
			if t.typ == OK {
				ok = true
				break
			}
			if t.typ == Info {
				break
			}
			failed = append(failed, t)
		}
		if ok || len(failed) == 0 {
			continue
		}
		first, last := failed[0], failed[len(failed)-1]
		if last.ret-first.call < int64(r.opt.StarveAfter) {
			continue
		}
		var others []int
		n := 0
		for _, l := range granted[k.key] {
			if l.process != k.process && l.acquire.call >= first.call && l.start <= last.ret {
				n++
				if !slices.Contains(others, l.process) {
					others = append(others, l.process)
				}
			}
		}
		if n == 0 {
			continue
		}
		out = append(out, starvation(r.clock, k.process, k.key, len(failed), first, last, others, n))
	}
	slices.SortFunc(out, func(a, b Anomaly) int {
		return cmp.Or(byFirstOp(a, b), cmp.Compare(a.Processes[0], b.Processes[0]))
	})
	return out
}

// starvation describes process p's n failed acquires of key, from first to
// last, while others were granted it granted times.
func starvation(c clock, p int, key string, n int, first, last *op, others []int, granted int) Anomaly {
	others = slices.Sorted(slices.Values(others))
	msg := fmt.Sprintf("process %d never acquired lock %q: %s from %s to %s failed, while process%s %s %s granted it %d times",
		p, key, attempts(n), c.at(first.call), c.at(last.ret), plural(len(others)), joinInts(others), was(len(others)), granted)
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
