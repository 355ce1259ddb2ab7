package judge

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/results"
)

// Run sums up the trials of a run of scenario name (in trial order) and
// their checks into its verdict: each trial's anomaly counts, the run's
// observation, whether it matches rules.Expect, and every count the
// verdict carries. The trials' Observed must come from [Trial].
func Run(name string, rules Rules, seed uint64, trials []results.Trial, checks []checker.Result) *results.Verdict {
	v := &results.Verdict{Scenario: name, Seed: seed, Trials: len(trials), Expect: rules.Expect,
		Anomalies: map[string]int{}, Tolerate: slices.Clone(rules.Tolerate)}
	observed := make([]string, len(trials))
	seen := map[checker.Kind]bool{}
	for i, t := range trials {
		t.Anomalies = Counts(checks[i])
		for k, n := range t.Anomalies {
			v.Anomalies[k] += n
		}
		if len(t.Anomalies) > 0 {
			v.TrialsWithAnomaly++
		}
		switch {
		case IsViolation(t.Observed):
			v.TrialsViolated++
		case t.Observed == Inconclusive:
			v.TrialsInconclusive++
		}
		for _, a := range checks[i].Anomalies {
			if seen[a.Kind] {
				v.ExamplesLeft++
				continue
			}
			seen[a.Kind] = true
			v.Examples = append(v.Examples, fmt.Sprintf("trial %d: %s: %s", t.Trial, a.Kind, a.Message))
		}
		v.WallSeconds += t.WallSeconds
		v.TrialResults = append(v.TrialResults, t)
		observed[i] = t.Observed
	}
	v.WallSecondsPerTrial = v.WallSeconds / float64(max(len(trials), 1))
	v.Observed = Overall(observed)
	v.Matched = Matches(rules.Expect, v.Observed)
	return v
}

// FirstViolation is when, after startMono, the first anomaly of r that
// counts against the lock happened in history h, if the trial's
// observation o is a violation; 0 otherwise.
func FirstViolation(h checker.History, r checker.Result, o Observation, rules Rules, startMono int64) time.Duration {
	if !IsViolation(o.Observed) {
		return 0
	}
	var first int64
	for _, a := range r.Anomalies {
		if at, ok := checker.ObservedAt(h, a); ok && !Tolerated(a.Kind, rules.Tolerate) && (first == 0 || at < first) {
			first = at
		}
	}
	if first == 0 {
		return 0
	}
	return time.Duration(max(first-startMono, 1))
}

// Contradicts reports whether an arm's conclusive trials go against its
// expectation: a violation where safe was expected, or none where one was.
// (An arm with an inconclusive trial does not match either, but its rate
// still stands, with the inconclusive trials counted beside it.)
func Contradicts(a results.ArmResult) bool {
	if a.Matched || a.Conclusive == 0 {
		return false
	}
	if a.Expect == Safe {
		return a.Violations > 0
	}
	return a.Violations == 0 || a.Inconclusive == 0
}

// Arm returns arm's result (rate and interval) from its verdict, with
// whether it contradicts its expectation.
func Arm(arm, summary string, v *results.Verdict, dir string) results.ArmResult {
	a := results.NewArmResult(arm, summary, v, dir)
	a.Contradicts = Contradicts(a)
	return a
}
