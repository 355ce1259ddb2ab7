package evidence

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockpick/lockpick/checker"
)

// A Fault is what happened to one step of a trial's fault schedule.
// Times are seconds from the start of the trial.
type Fault struct {
	// Step is the step's index in the scenario's faults, from 0.
	Step int `json:"step"`
	// Fault is its kind ("kill") and Target what it hit ("n1", "c1", "r2").
	// Aim is the target as the scenario aimed it ("@master"), which the
	// nemesis resolved to Target as the fault fired; empty for a named one.
	Fault  string `json:"fault"`
	Target string `json:"target"`
	Aim    string `json:"aim,omitempty"`
	// Desc describes it as the history does, e.g. "restart after 2.5s n3".
	Desc string `json:"desc"`
	// At is when it was due, jitter included.
	At float64 `json:"at_s"`
	// Fired is when it was injected; nil if it never was.
	Fired *float64 `json:"fired_s"`
	// Missed says why a step waiting for a moment (a scenario's when:)
	// never fired: "the moment never came: ...".
	Missed string `json:"missed,omitempty"`
	// Late says why a step that fired at its moment was not in place
	// before the client that brought the moment went on.
	Late string `json:"late,omitempty"`
	// Effect is what lockpick observed of it right after, e.g. "down" or
	// "clock +5.001s (read back with TIME)"; NoEffect says why the effect
	// could not be seen. Both are empty for a fault nobody can observe.
	Effect   string `json:"effect,omitempty"`
	NoEffect string `json:"no_effect,omitempty"`
	// Lost is how many unsynced bytes a power loss dropped; nil for other
	// faults.
	Lost *int64 `json:"lost_bytes,omitempty"`
	// Effective is when the inject returned with its effect in place (a
	// failover: once the new master was seen); nil without an effect.
	// Requirements with `after:` count from here.
	Effective *float64 `json:"effective_s,omitempty"`
	// Error is the injection's error.
	Error string `json:"error,omitempty"`
	// HealDue is when its `for` made the heal due; nil for a fault left to
	// the end of the trial. Healed is when it really was healed (at its
	// `for`, or at the end of the trial); HealError is the heal's error.
	HealDue   *float64 `json:"heal_due_s,omitempty"`
	Healed    *float64 `json:"healed_s,omitempty"`
	HealError string   `json:"heal_error,omitempty"`
	// HealLate says why the heal did not happen when it was due, e.g.
	// "its inject was still running"; the fault then lasted longer than
	// the schedule says, and the trial proves nothing unless SeenBy shows
	// that the extra time met nothing.
	HealLate string `json:"heal_late,omitempty"`
	// SeenBy, when set, names the clients through whose operations alone
	// the fault can be seen (a fault on a Redis master that nothing but its
	// clients talks to, or on its links to them, under a lock whose every
	// request is in the history): a late heal then makes the trial
	// inconclusive only if one of their operations was in flight while the
	// heal was late.
	SeenBy []int `json:"seen_by,omitempty"`
	// Ensemble, set with HealLate on the kill or pause of an etcd or
	// ZooKeeper member, names the ensemble's members: a late heal then
	// makes the trial inconclusive only if the members no fault held down
	// while the heal was late were no majority.
	Ensemble []string `json:"ensemble,omitempty"`
	// KeyBefore and KeyAfter say whether the lock's key was on the node
	// just before the fault hit it, and once it took effect (after a kill
	// or a pause, once the node answered again): "held", "absent", or
	// empty when unknown. For a client fault or a client's link, KeyBefore
	// says whether that client held the lock.
	KeyBefore string `json:"key_before,omitempty"`
	KeyAfter  string `json:"key_after,omitempty"`
}

// name returns e.g. "fault 2 (kill n1)".
func (f Fault) name() string { return fmt.Sprintf("fault %d (%s)", f.Step+1, f.Desc) }

// An Evidence is what a trial proves, as written to verdict.json: if
// Conclusive is false its verdict cannot be trusted, and Reasons say why.
type Evidence struct {
	// Conclusive is true when every check passed.
	Conclusive bool `json:"conclusive"`
	// Reasons lists, one line each, what is missing.
	Reasons []string `json:"reasons,omitempty"`
	// Attempts and Grants count acquires invoked and granted (ok), per client.
	Attempts map[int]int `json:"attempts"`
	Grants   map[int]int `json:"grants"`
	// LongestWait is, per client, the longest time in seconds from an
	// acquire it invoked without holding the lock to its next grant (or the
	// end of the history): how long it was kept waiting.
	LongestWait map[int]float64 `json:"longest_wait_s,omitempty"`
	// Extends counts ok extends: renewals by a watchdog or by the client.
	Extends int `json:"extends,omitempty"`
	// Events is the number of events in the history.
	Events int `json:"events"`
	// Faults is the schedule as it happened.
	Faults []Fault `json:"faults,omitempty"`
	// Required holds every requirement with what the trial showed,
	// including the implicit "at least 1 grant".
	Required []Check `json:"required"`
	// Notes are effects observed besides the faults, e.g. "+2.310s the
	// sentinels switched master from n1 to n2".
	Notes []string `json:"notes,omitempty"`
	// Problems are failures of the harness or the subject during the
	// trial: a worker that died, a lock program that wrote garbage.
	Problems []string `json:"problems,omitempty"`
}

// An Input is what [Evaluate] looks at.
type Input struct {
	// History is the trial's history and Result its check.
	History checker.History
	Result  checker.Result
	// Start is when the trial began, in the history's monotonic ns.
	Start int64
	// Faults is the schedule as the nemesis played it.
	Faults []Fault
	// Require is the scenario's requirements.
	Require []Requirement
	// Notes are observed effects for the record; they prove nothing alone.
	Notes []string
	// Problems are failures of the harness or the subject; any makes the
	// trial inconclusive.
	Problems []string
}

// Evaluate checks the trial described by in and returns its evidence.
func Evaluate(in Input) Evidence {
	ev := Evidence{Attempts: map[int]int{}, Grants: map[int]int{}, LongestWait: map[int]float64{}, Events: len(in.History),
		Faults: in.Faults, Notes: slices.Clip(in.Notes), Problems: in.Problems}
	waiting := map[int]int64{} // client -> invoke of its first acquire since its last grant
	wait := func(p int, until int64) {
		if since, ok := waiting[p]; ok {
			ev.LongestWait[p] = max(ev.LongestWait[p], float64(until-since)/1e9)
			delete(waiting, p)
		}
	}
	var end int64
	for _, e := range in.History {
		end = max(end, e.Time)
		switch {
		case e.F == checker.FAcquire && e.Type == checker.Invoke:
			ev.Attempts[e.Process]++
			if _, ok := waiting[e.Process]; !ok {
				waiting[e.Process] = e.Time
			}
		case e.F == checker.FAcquire && e.Type == checker.OK:
			ev.Grants[e.Process]++
			wait(e.Process, e.Time)
		case e.F == checker.FExtend && e.Type == checker.OK:
			ev.Extends++
		}
	}
	for p := range waiting {
		wait(p, end)
	}
	var reasons []string
	for _, f := range in.Faults {
		switch {
		case f.Error != "":
			reasons = append(reasons, fmt.Sprintf("%s failed: %s", f.name(), f.Error))
		case f.Missed != "":
			reasons = append(reasons, fmt.Sprintf("%s, due from +%.3fs, never fired: %s", f.name(), f.At, f.Missed))
		case f.Fired == nil:
			reasons = append(reasons, fmt.Sprintf("%s, due at +%.3fs, never fired", f.name(), f.At))
		case f.NoEffect != "":
			reasons = append(reasons, fmt.Sprintf("%s fired at +%.3fs but had no effect: %s", f.name(), *f.Fired, f.NoEffect))
		}
		if f.Late != "" {
			reasons = append(reasons, fmt.Sprintf("%s fired at its moment but was not in place in time: %s", f.name(), f.Late))
		}
		if f.HealLate != "" {
			if matters, note := lateHeal(f, in.Faults, in.History, in.Start); matters {
				reasons = append(reasons, fmt.Sprintf("%s was due to heal at +%.3fs but %s%s", f.name(), *f.HealDue, f.HealLate, healedAt(f.Healed)))
			} else {
				ev.Notes = append(ev.Notes, note)
			}
		}
		if f.HealError != "" {
			reasons = append(reasons, fmt.Sprintf("healing %s failed: %s", f.name(), f.HealError))
		}
	}
	if n := in.Result.Ignored; n > 0 {
		reasons = append(reasons, fmt.Sprintf("the history is incomplete: %d completions have no invoke", n))
	}
	reasons = append(reasons, in.Problems...)
	require := in.Require
	if !hasPlainGrants(require) {
		one := 1
		require = append([]Requirement{{Grants: &one}}, require...)
	}
	for _, r := range require {
		c := in.check(r)
		ev.Required = append(ev.Required, c)
		if !c.Met {
			reasons = append(reasons, fmt.Sprintf("required %s; found %s", c.Require, c.Found))
		}
	}
	ev.Reasons, ev.Conclusive = reasons, len(reasons) == 0
	return ev
}

// healedAt returns "; healed at +1.234s", or "; never healed".
func healedAt(t *float64) string {
	if t == nil {
		return "; never healed"
	}
	return fmt.Sprintf("; healed at +%.3fs", *t)
}

// hasPlainGrants reports whether rs asks for a number of grants over the
// whole trial, which replaces the implicit "at least 1 grant".
func hasPlainGrants(rs []Requirement) bool {
	for _, r := range rs {
		if r.Grants != nil && r.After == "" {
			return true
		}
	}
	return false
}

// Summary says in one line what the evidence shows, e.g. "12 grants to 3
// clients, 2 faults fired with their effect, 3/3 requirements met".
func (ev Evidence) Summary() string {
	grants := 0
	for _, n := range ev.Grants {
		grants += n
	}
	effect := 0
	for _, f := range ev.Faults {
		if f.Fired != nil && f.Error == "" && f.NoEffect == "" {
			effect++
		}
	}
	met := 0
	for _, c := range ev.Required {
		if c.Met {
			met++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s to %d of %d clients", grantsWord(grants), len(ev.Grants), len(ev.Attempts))
	longest, who := 0.0, 0
	for p, w := range ev.LongestWait {
		if w > longest || (w == longest && p < who) {
			longest, who = w, p
		}
	}
	if longest >= 1 {
		fmt.Fprintf(&b, " (client %d waited %.1fs)", who, longest)
	}
	if len(ev.Faults) > 0 {
		fmt.Fprintf(&b, ", %d/%d faults fired with their effect", effect, len(ev.Faults))
	}
	fmt.Fprintf(&b, ", %d/%d requirements met", met, len(ev.Required))
	return b.String()
}
