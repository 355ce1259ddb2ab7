package evidence

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockpick/lockpick/checker"
)

// lateHeal says whether f's late heal could have changed the trial, and a
// note for the record when it could not.
//
// A fault that healed late lasted longer than its schedule says. When the
// nemesis could name the clients through whose operations alone the fault
// is seen (SeenBy), the extra time matters only if one of their operations
// was in flight in it, from when the heal was due to when it came: the
// history says whether one was. A client pause is seen so too once the
// frozen client had lost the lock (pausedOut). A consensus member's late
// return matters only if the rest lost their quorum meanwhile
// (quorumLost). Otherwise any late heal matters.
func lateHeal(f Fault, all []Fault, h checker.History, start int64) (matters bool, note string) {
	if f.HealDue == nil || f.Healed == nil {
		return true, ""
	}
	if f.Ensemble != nil {
		return quorumLost(f, all)
	}
	from, to := start+int64(*f.HealDue*1e9), start+int64(*f.Healed*1e9)
	seen, why, paused := f.SeenBy, "", false
	if seen == nil {
		seen, why = pausedOut(f, h, start, from)
		paused = seen != nil
	}
	if seen == nil {
		return true, ""
	}
	if !inFlight(h, seen, from, to) {
		return false, fmt.Sprintf("%s healed at +%.3fs, %.0fms after it was due, while no operation of client%s %s was in flight%s: the lateness met nothing",
			f.name(), *f.Healed, (*f.Healed-*f.HealDue)*1000, plural(len(seen)), joinInts(seen), why)
	}
	if paused && unchanged(f, all, h, seen[0], start) {
		return false, fmt.Sprintf("%s healed at +%.3fs, %.0fms after it was due%s, and nothing changed meanwhile (no other client's grant, release, extend or write completed, no lease ended, no other fault acted): thawed on time, client %d would have met the same lock: the lateness met nothing",
			f.name(), *f.Healed, (*f.Healed-*f.HealDue)*1000, why, seen[0])
	}
	return true, ""
}

// unchanged reports whether, from when the heal of f (a pause of client p,
// who had lost the lock) was due to when it came, the lock and the
// resource stayed as they were: no other client's grant, release, extend
// or write completed (ok or unknown), the certain holders of the lock were
// the same at both ends, and no other fault fired or healed. The frozen
// client's operations at its thaw then met what they would have met
// thawed on time, only later: the lateness changed no outcome.
func unchanged(f Fault, all []Fault, h checker.History, p int, start int64) bool {
	from, to := start+int64(*f.HealDue*1e9), start+int64(*f.Healed*1e9)
	for _, e := range h {
		if e.Time <= from || e.Time > to || e.Process == p || e.Process < 0 || e.Type == checker.Invoke || e.Type == checker.Fail {
			continue
		}
		switch e.F {
		case checker.FAcquire, checker.FRelease, checker.FExtend, checker.FWrite:
			return false
		}
	}
	if !slices.Equal(checker.Holders(h, from), checker.Holders(h, to)) {
		return false
	}
	for _, g := range all {
		if g.Step == f.Step {
			continue
		}
		for _, t := range []*float64{g.Fired, g.Effective, g.Healed} {
			if t != nil && start+int64(*t*1e9) > from && start+int64(*t*1e9) <= to {
				return false
			}
		}
	}
	return true
}

// quorumLost says whether f, the kill or pause of a member of f.Ensemble
// whose heal came late, could have changed the trial: only if, while it was
// late, other faults held down so many members that the rest were no
// majority, or split the ensemble (a peer partition). An etcd or ZooKeeper
// ensemble with a quorum serves its clients as it would with the member
// back, so otherwise the extra time changed no outcome.
func quorumLost(f Fault, all []Fault) (matters bool, note string) {
	from, to := *f.HealDue, *f.Healed
	down := []string{f.Target}
	for _, g := range all {
		if g.Step == f.Step || !slices.Contains(f.Ensemble, g.Target) || g.Fired == nil || *g.Fired > to || (g.Healed != nil && *g.Healed < from) {
			continue
		}
		if g.Fault == "peer-partition" {
			return true, ""
		}
		if !slices.Contains(down, g.Target) {
			down = append(down, g.Target)
		}
	}
	if len(f.Ensemble)-len(down) <= len(f.Ensemble)/2 {
		return true, ""
	}
	return false, fmt.Sprintf("%s healed at +%.3fs, %.0fms after it was due, while %d of the %d members %s kept a quorum without it: the lateness met nothing",
		f.name(), to, (to-from)*1000, len(f.Ensemble)-len(down), len(f.Ensemble), strings.Join(f.Ensemble, ", "))
}

// pausedOut returns the client f froze, if f is a client pause and another
// client was granted the frozen client's key after the pause took effect
// and before due: the frozen client had lost the lock by then (or the
// grant is a double grant the checker reports, unchanged by a later
// thaw), so nothing but its own operations could meet the extra time.
func pausedOut(f Fault, h checker.History, start, due int64) ([]int, string) {
	p, ok := clientOf(f.Target)
	if f.Fault != "pause-client" || !ok || f.Fired == nil {
		return nil, ""
	}
	from := *f.Fired
	if f.Effective != nil {
		from = *f.Effective
	}
	froze := start + int64(from*1e9)
	key, has := "", false
	for _, e := range h {
		if e.Time <= froze && e.Process == p && e.F == checker.FAcquire && e.Type == checker.OK {
			key, has = e.Key, true
		}
	}
	if !has {
		return nil, ""
	}
	for _, e := range h {
		if e.Process != p && e.F == checker.FAcquire && e.Type == checker.OK && e.Key == key && e.Time > froze && e.Time <= due {
			return []int{p}, fmt.Sprintf(", and the lock had passed to client %d at +%.3fs while client %d was frozen (since +%.3fs)", e.Process, float64(e.Time-start)/1e9, p, from)
		}
	}
	return nil, ""
}

// clientOf returns the client a client-fault target such as "c2" names.
func clientOf(target string) (int, bool) {
	p, err := strconv.Atoi(strings.TrimPrefix(target, "c"))
	return p, err == nil && strings.HasPrefix(target, "c")
}

// inFlight reports whether a process of ps had an operation in flight at
// some time in [from, to]: invoked by to and not completed before from.
func inFlight(h checker.History, ps []int, from, to int64) bool {
	open := map[int]int64{}
	for _, e := range h {
		if !slices.Contains(ps, e.Process) {
			continue
		}
		if e.Type == checker.Invoke {
			open[e.Process] = e.Time
			continue
		}
		if inv, ok := open[e.Process]; ok {
			delete(open, e.Process)
			if inv <= to && e.Time >= from {
				return true
			}
		}
	}
	for _, inv := range open {
		if inv <= to {
			return true
		}
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
