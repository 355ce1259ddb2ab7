package judge

import (
	"fmt"
	"maps"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/results"
)

// A Record is what a run recorded of one trial beside its history: what
// the history alone does not hold.
type Record struct {
	// Evidence is the trial's: what the faults did, the requirements, the
	// harness's and the lock's problems.
	Evidence evidence.Evidence
	// Anomalies counts, by kind, the anomalies the run found in the
	// history; compared only when Counted (a soak's whole history was
	// judged in rounds, and --max-ttl checks it otherwise).
	Anomalies map[string]int
	Counted   bool
}

// RecordOf is what trial t of a run folder recorded of its own history.
func RecordOf(t results.Trial) Record {
	return Record{Evidence: t.Evidence, Anomalies: t.Anomalies, Counted: true}
}

// Again judges a trial's history checked again, as r, by what its run
// recorded of it: with the recorded evidence, so it gives the run's own
// observation. A history whose anomalies are not those the run recorded
// is not the one it judged (cut short or changed, or checked by another
// checker): it proves nothing, and is Inconclusive.
func Again(rules Rules, r checker.Result, rec Record) Observation {
	o := Trial(rules, r, rec.Evidence)
	got, want := Counts(r), nonZero(rec.Anomalies)
	if !rec.Counted || maps.Equal(got, want) {
		return o
	}
	why := fmt.Sprintf("the run recorded %s in this trial, this history shows %s: it is not the history the run judged (cut short or changed), or this lockpick checks it otherwise",
		results.CountsText(want), results.CountsText(got))
	if o.Observed == Inconclusive {
		why += "; " + o.Reason
	}
	return Observation{Inconclusive, why}
}

// nonZero returns m without its zero counts (a nil map as an empty one).
func nonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range m {
		if n != 0 {
			out[k] = n
		}
	}
	return out
}
