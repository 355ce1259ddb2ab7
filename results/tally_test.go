package results_test

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/results"
)

// TestTally_SameEverywhere: a run whose one trial is inconclusive with
// anomalies says the same counts, the first anomaly of every kind and why
// it failed in the JUnit file, the summary and the report. Before, each
// worded the counts itself, and "0/1 trials with an anomaly" stood above
// the anomalies it listed.
func TestTally_SameEverywhere(t *testing.T) {
	v := &results.Verdict{Scenario: "s", Expect: "unsafe", Observed: "inconclusive", Trials: 1,
		TrialsWithAnomaly: 1, TrialsInconclusive: 1, Anomalies: map[string]int{"stale-write": 2, "lost-update": 1},
		Examples:     []string{"trial 1: stale-write: w1", "trial 1: lost-update: l1"},
		ExamplesLeft: 1,
		TrialResults: []results.Trial{{Trial: 1, Observed: "inconclusive", Reason: "fault 1 (kill n1) never fired"}}}
	tally := "0/1 trials unsafe, stuck or starving, 1 inconclusive, 1 with an anomaly"
	var junit, summary, report bytes.Buffer
	if err := results.WriteJUnit(&junit, []*results.Verdict{v}, nil); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteSummary(&summary, []*results.Verdict{v}); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Report{Verdict: v, Trial: 1}).WriteHTML(&report); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"JUnit": junit.String(), "summary": summary.String(), "report": html.UnescapeString(report.String())} {
		for _, want := range []string{tally, "trial 1: stale-write: w1", "trial 1: lost-update: l1", "and 1 more anomaly",
			"expected unsafe, observed inconclusive; trial 1 inconclusive: fault 1 (kill n1) never fired"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, text)
			}
		}
	}
}
