package evidence

import (
	"slices"
	"strings"

	"github.com/lockpick/lockpick/checker"
)

// The observations of a trial, and of a run. A scenario expects one of the
// first four; Inconclusive never matches an expectation.
const (
	Safe         = "safe"         // conclusive, and no anomaly
	Unsafe       = "unsafe"       // a safety anomaly: double-grant, stale-write, lost-update
	Stuck        = "stuck"        // a stuck-lock, and no safety anomaly
	Starves      = "starves"      // a starvation (or livelock), and no safety anomaly or stuck-lock
	Inconclusive = "inconclusive" // the trial proves nothing: see its reasons
)

// Conclusive is the expectation of a run that judges nothing but proof: any
// conclusive observation meets it. A run of the user's own lock (`lockpick
// run --subject`) expects it, since the scenario's own expectation is about
// lockpick's lock.
const Conclusive = "conclusive"

// Observe turns a trial's check result and evidence into its observation,
// leaving out the anomaly kinds in tolerate. It returns Inconclusive, with
// the reason in one line, when the evidence is missing, or when a
// linearizability search timed out and no safety anomaly was found (a
// stuck lock does not rule out an unsafe history the search would have
// found).
func Observe(r checker.Result, ev Evidence, tolerate []string) (observed, reason string) {
	if !ev.Conclusive {
		return Inconclusive, strings.Join(ev.Reasons, "; ")
	}
	c := r.Counts()
	for k := range c {
		if Tolerated(k, tolerate) {
			delete(c, k)
		}
	}
	switch {
	case unsafe(c):
		return Unsafe, ""
	case len(r.TimedOut) > 0:
		return Inconclusive, "the linearizability search timed out: " + strings.Join(r.TimedOut, ", ")
	case c[checker.StuckLock] > 0:
		return Stuck, ""
	case c[checker.Starvation] > 0:
		return Starves, ""
	}
	return Safe, ""
}

// IsViolation reports whether observation o counts against the lock:
// unsafe, stuck or starves.
func IsViolation(o string) bool { return o == Unsafe || o == Stuck || o == Starves }

// Tolerated reports whether a scenario's tolerate list leaves anomaly kind
// k out of its verdict.
func Tolerated(k checker.Kind, tolerate []string) bool {
	return slices.Contains(tolerate, string(k))
}

// BreaksSafety reports whether an anomaly kind breaks mutual exclusion
// (double-grant, stale-write, lost-update), making a trial Unsafe, rather
// than liveness.
func BreaksSafety(k checker.Kind) bool {
	return k == checker.DoubleGrant || k == checker.StaleWrite || k == checker.LostUpdate
}

func unsafe(counts map[checker.Kind]int) bool {
	for k, n := range counts {
		if n > 0 && BreaksSafety(k) {
			return true
		}
	}
	return false
}

// Overall returns a run's observation from its trials': Inconclusive if any
// trial was, else Unsafe if any trial was, else Stuck, else Starves, else
// Safe.
// An empty run is Inconclusive.
func Overall(trials []string) string {
	if len(trials) == 0 {
		return Inconclusive
	}
	seen := map[string]bool{}
	for _, o := range trials {
		seen[o] = true
	}
	for _, o := range []string{Inconclusive, Unsafe, Stuck, Starves, Safe} {
		if seen[o] {
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
	return expect == observed || expect == Conclusive
}
