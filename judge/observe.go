package judge

import (
	"slices"
	"strings"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
)

// The observations of a trial, and of a run. A scenario expects one of the
// first four; Inconclusive never matches an expectation.
const (
	Safe         = evidence.Safe         // conclusive, and no anomaly
	Unsafe       = evidence.Unsafe       // an anomaly that breaks mutual exclusion
	Stuck        = evidence.Stuck        // a stuck-lock, and no safety anomaly
	Starves      = evidence.Starves      // a starvation (or livelock), and no safety anomaly or stuck-lock
	Inconclusive = evidence.Inconclusive // the trial proves nothing: see its reasons
)

// Conclusive is the expectation of a run that judges nothing but proof: any
// conclusive observation meets it. A run of the user's own lock expects it,
// since the scenario's own expectation is about lockpick's lock.
const Conclusive = evidence.Conclusive

// Rules are what a scenario says about judging its trials.
type Rules struct {
	// Expect is safe, unsafe, stuck, starves or [Conclusive].
	Expect string
	// Tolerate lists anomaly kinds counted but left out of the observation.
	Tolerate []string
}

// An Observation is what one trial showed.
type Observation struct {
	// Observed is safe, unsafe, stuck, starves or inconclusive; Reason says,
	// in one line, why an inconclusive trial proves nothing.
	Observed string
	Reason   string
}

// Trial judges one trial from its check result r and its evidence ev. It is
// Inconclusive, with the reason, when the evidence is missing, or when a
// linearizability search timed out and no safety anomaly was found (a
// stuck lock does not rule out an unsafe history the search would have
// found).
func Trial(rules Rules, r checker.Result, ev evidence.Evidence) Observation {
	if !ev.Conclusive {
		reason := strings.Join(ev.Reasons, "; ")
		if reason == "" {
			reason = "its evidence is not conclusive, and says no more"
		}
		return Observation{Inconclusive, reason}
	}
	counted := map[checker.Kind]int{}
	for k, n := range r.Counts() {
		if !Tolerated(k, rules.Tolerate) {
			counted[k] = n
		}
	}
	switch {
	case hasSafetyAnomaly(counted):
		return Observation{Observed: Unsafe}
	case len(r.TimedOut) > 0:
		return Observation{Inconclusive, "the linearizability search timed out: " + strings.Join(r.TimedOut, ", ")}
	case counted[checker.StuckLock] > 0:
		return Observation{Observed: Stuck}
	case counted[checker.Starvation] > 0:
		return Observation{Observed: Starves}
	}
	return Observation{Observed: Safe}
}

// IsViolation reports whether observation o counts against the lock:
// unsafe, stuck or starves.
func IsViolation(o string) bool { return o == Unsafe || o == Stuck || o == Starves }

// Tolerated reports whether a scenario's tolerate list leaves anomaly kind
// k out of its verdict.
func Tolerated(k checker.Kind, tolerate []string) bool {
	return slices.Contains(tolerate, string(k))
}

// BreaksSafety reports whether an anomaly kind breaks mutual exclusion,
// making a trial Unsafe: every kind but the two of liveness (stuck-lock,
// starvation), so a kind a newer checker adds is never taken as harmless.
func BreaksSafety(k checker.Kind) bool {
	return k != checker.StuckLock && k != checker.Starvation
}

func hasSafetyAnomaly(counts map[checker.Kind]int) bool {
	for k, n := range counts {
		if n > 0 && BreaksSafety(k) {
			return true
		}
	}
	return false
}

// Overall returns a run's observation from its trials': Inconclusive if any
// trial was (or there are none), else Unsafe if any trial was, else Stuck,
// else Starves, else Safe.
func Overall(trials []string) string {
	if len(trials) == 0 {
		return Inconclusive
	}
	for _, o := range []string{Inconclusive, Unsafe, Stuck, Starves, Safe} {
		if slices.Contains(trials, o) {
			return o
		}
	}
	return Inconclusive // an observation nobody defined
}

// Matches reports whether an observation meets an expectation (safe,
// unsafe, stuck, starves, or [Conclusive]). Inconclusive matches nothing.
func Matches(expect, observed string) bool {
	if observed == Inconclusive || expect == Inconclusive {
		return false
	}
	return expect == observed || (expect == Conclusive && slices.Contains([]string{Safe, Unsafe, Stuck, Starves}, observed))
}

// Counts returns r's anomaly counts keyed as verdict.json keys them: only
// the kinds found, tolerated ones included.
func Counts(r checker.Result) map[string]int {
	m := map[string]int{}
	for k, n := range r.Counts() {
		if n > 0 {
			m[string(k)] += n
		}
	}
	return m
}
