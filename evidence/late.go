package evidence

import (
	"fmt"
	"slices"
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
// history says whether one was. Without SeenBy, any late heal matters.
func lateHeal(f Fault, h checker.History, start int64) (matters bool, note string) {
	if f.SeenBy == nil || f.HealDue == nil || f.Healed == nil {
		return true, ""
	}
	from, to := start+int64(*f.HealDue*1e9), start+int64(*f.Healed*1e9)
	if inFlight(h, f.SeenBy, from, to) {
		return true, ""
	}
	return false, fmt.Sprintf("%s healed at +%.3fs, %.0fms after it was due, while no operation of client%s %s was in flight: the lateness met nothing",
		f.name(), *f.Healed, (*f.Healed-*f.HealDue)*1000, plural(len(f.SeenBy)), joinInts(f.SeenBy))
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
