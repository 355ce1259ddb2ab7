package judge_test

import (
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
)

func TestTrial(t *testing.T) {
	good := evidence.Evidence{Conclusive: true}
	bad := evidence.Evidence{Reasons: []string{"fault 1 (kill n1), due at +5.000s, never fired"}}
	dg := checker.Anomaly{Kind: checker.DoubleGrant}
	stuck := checker.Anomaly{Kind: checker.StuckLock}
	starve := checker.Anomaly{Kind: checker.Starvation}
	for _, tc := range []struct {
		name     string
		r        checker.Result
		ev       evidence.Evidence
		tolerate []string
		want     string
		reason   string
	}{
		{name: "clean", ev: good, want: judge.Safe},
		{name: "double grant", r: checker.Result{Anomalies: []checker.Anomaly{dg}}, ev: good, want: judge.Unsafe},
		{name: "stuck", r: checker.Result{Anomalies: []checker.Anomaly{stuck}}, ev: good, want: judge.Stuck},
		{name: "starves", r: checker.Result{Anomalies: []checker.Anomaly{starve}}, ev: good, want: judge.Starves},
		{name: "stuck beats starves", r: checker.Result{Anomalies: []checker.Anomaly{starve, stuck}}, ev: good, want: judge.Stuck},
		{name: "unsafe beats starves", r: checker.Result{Anomalies: []checker.Anomaly{starve, dg}}, ev: good, want: judge.Unsafe},
		{name: "tolerated starvation", r: checker.Result{Anomalies: []checker.Anomaly{starve}}, ev: good, tolerate: []string{"starvation"}, want: judge.Safe},
		{name: "tolerated stuck", r: checker.Result{Anomalies: []checker.Anomaly{stuck}}, ev: good, tolerate: []string{"stuck-lock"}, want: judge.Safe},
		{name: "missing evidence beats a clean check", ev: bad, want: judge.Inconclusive, reason: "never fired"},
		{name: "missing evidence beats an anomaly", r: checker.Result{Anomalies: []checker.Anomaly{dg}}, ev: bad, want: judge.Inconclusive, reason: "never fired"},
		{name: "timeout", r: checker.Result{Verdict: checker.Unknown, TimedOut: []string{"counter model"}}, ev: good, want: judge.Inconclusive, reason: "timed out"},
		// The case observed() got wrong: Illegal (a tolerated anomaly) wins
		// over the timeout in the checker's verdict.
		{name: "timeout next to a tolerated anomaly", r: checker.Result{Verdict: checker.Illegal, Anomalies: []checker.Anomaly{stuck}, TimedOut: []string{"counter model"}},
			ev: good, tolerate: []string{"stuck-lock"}, want: judge.Inconclusive, reason: "timed out"},
		{name: "timeout next to a stuck lock", r: checker.Result{Anomalies: []checker.Anomaly{stuck}, TimedOut: []string{"counter model"}}, ev: good, want: judge.Inconclusive, reason: "timed out"},
		// A kind no rule above names (a newer checker's) breaks safety.
		{name: "shared token", r: checker.Result{Anomalies: []checker.Anomaly{{Kind: "shared-token"}}}, ev: good, want: judge.Unsafe},
		{name: "timeout next to a double grant", r: checker.Result{Anomalies: []checker.Anomaly{dg}, TimedOut: []string{"counter model"}}, ev: good, want: judge.Unsafe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := judge.Trial(judge.Rules{Tolerate: tc.tolerate}, tc.r, tc.ev)
			got, reason := o.Observed, o.Reason
			if got != tc.want || !strings.Contains(reason, tc.reason) || (tc.reason == "" && reason != "") {
				t.Errorf("Trial = %q, %q; want %q with a reason containing %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestOverallAndMatches(t *testing.T) {
	for _, tc := range []struct {
		trials []string
		want   string
	}{
		{nil, judge.Inconclusive},
		{[]string{"safe", "safe"}, judge.Safe},
		{[]string{"safe", "unsafe"}, judge.Unsafe},
		{[]string{"stuck", "safe"}, judge.Stuck},
		{[]string{"unsafe", "stuck"}, judge.Unsafe},
		{[]string{"safe", "starves"}, judge.Starves},
		{[]string{"starves", "stuck"}, judge.Stuck},
		{[]string{"unsafe", "inconclusive", "unsafe"}, judge.Inconclusive},
		{[]string{"unknown"}, judge.Inconclusive},
	} {
		if got := judge.Overall(tc.trials); got != tc.want {
			t.Errorf("Overall(%q) = %q, want %q", tc.trials, got, tc.want)
		}
	}
	for _, tc := range []struct {
		expect, observed string
		want             bool
	}{
		{"safe", "safe", true}, {"unsafe", "unsafe", true}, {"stuck", "stuck", true},
		{"safe", "unsafe", false}, {"unsafe", "safe", false}, {"safe", "inconclusive", false},
		{"unsafe", "inconclusive", false}, {"inconclusive", "inconclusive", false}, {"safe", "unknown", false},
		{"conclusive", "unsafe", true}, {"conclusive", "safe", true}, {"conclusive", "inconclusive", false}, {"conclusive", "unknown", false},
	} {
		if got := judge.Matches(tc.expect, tc.observed); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.expect, tc.observed, got, tc.want)
		}
	}
}

// TestRun_CountsAgree: a trial that is inconclusive with anomalies is
// counted as a trial with an anomaly, not as a violation, and every
// anomaly kind has its first example. Before, verdict.json listed its
// stale-write and lost-update while trials_with_anomaly was 0, and run
// printed "0/1 trials with an anomaly" above them.
func TestRun_CountsAgree(t *testing.T) {
	bad := evidence.Evidence{Reasons: []string{"fault 1 (kill n1) never fired"}}
	r := checker.Result{Anomalies: []checker.Anomaly{
		{Kind: checker.StaleWrite, Message: "w1"}, {Kind: checker.LostUpdate, Message: "l1"},
		{Kind: checker.StaleWrite, Message: "w2"}, {Kind: checker.LostUpdate, Message: "l2"}, {Kind: checker.DoubleGrant, Message: "d1"}}}
	o := judge.Trial(judge.Rules{Expect: "unsafe"}, r, bad)
	v := judge.Run("s", judge.Rules{Expect: "unsafe"}, 1, []results.Trial{{Trial: 1, Observed: o.Observed, Reason: o.Reason}}, []checker.Result{r})
	if v.Observed != judge.Inconclusive || v.Matched {
		t.Fatalf("observed %s, matched %v; want inconclusive, not matched", v.Observed, v.Matched)
	}
	if v.TrialsWithAnomaly != 1 || v.TrialsViolated != 0 || v.TrialsInconclusive != 1 {
		t.Errorf("with anomaly %d, violated %d, inconclusive %d; want 1, 0, 1", v.TrialsWithAnomaly, v.TrialsViolated, v.TrialsInconclusive)
	}
	if got, want := v.Tally("trial"), "0/1 trials unsafe, stuck or starving, 1 inconclusive, 1 with an anomaly"; got != want {
		t.Errorf("Tally = %q, want %q", got, want)
	}
	lines := v.ExampleLines()
	want := []string{"trial 1: stale-write: w1", "trial 1: lost-update: l1", "trial 1: double-grant: d1", "and 2 more anomalies"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("ExampleLines = %q, want the first of every kind, then the rest counted: %q", lines, want)
	}
}

// TestAgain: a history checked again gives its run's observation from the
// recorded evidence (here its requirement met, which the history alone
// cannot show), and is inconclusive when its anomalies are not the ones
// recorded.
func TestAgain(t *testing.T) {
	good := evidence.Evidence{Conclusive: true}
	r := checker.Result{Anomalies: []checker.Anomaly{{Kind: checker.DoubleGrant}}}
	rec := judge.Record{Evidence: good, Anomalies: map[string]int{"double-grant": 1}, Counted: true}
	if o := judge.Again(judge.Rules{}, r, rec); o.Observed != judge.Unsafe {
		t.Errorf("Again = %+v, want unsafe", o)
	}
	if o := judge.Again(judge.Rules{}, checker.Result{}, rec); o.Observed != judge.Inconclusive || !strings.Contains(o.Reason, "not the history the run judged") {
		t.Errorf("a history without its recorded double grant: %+v, want inconclusive", o)
	}
	rec.Counted = false
	if o := judge.Again(judge.Rules{}, checker.Result{}, rec); o.Observed != judge.Safe {
		t.Errorf("not counted: %+v, want safe", o)
	}
}
