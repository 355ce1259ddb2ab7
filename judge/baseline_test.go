package judge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
)

func TestBaseline_Compare(t *testing.T) {
	t.Parallel()
	b := judge.Baseline{Version: 1, Subject: "mylock", Scenarios: map[string]judge.BaselineEntry{
		"a": {Observed: "safe"},
		"b": {Observed: "unsafe", Anomalies: []string{"double-grant"}},
		"c": {Observed: "stuck", Anomalies: []string{"stuck-lock"}},
	}}
	v := func(name, observed string, kinds ...string) *results.Verdict {
		m := map[string]int{}
		for _, k := range kinds {
			m[k] = 1
		}
		return &results.Verdict{Scenario: name + "@mylock", Observed: observed, Anomalies: m}
	}
	for _, tc := range []struct {
		name  string
		now   *results.Verdict
		worse bool
		what  string
	}{
		{"safe to inconclusive", v("a", "inconclusive"), true, "safe → inconclusive"},
		{"a new kind, same verdict", v("b", "unsafe", "double-grant", "stale-write"), true, "unsafe, anomalies changed (new: stale-write)"},
		{"stuck to unsafe", v("c", "unsafe", "double-grant"), true, "stuck → unsafe (new: double-grant) (gone: stuck-lock)"},
		{"unsafe to safe", v("b", "safe"), false, "unsafe → safe (gone: double-grant)"},
		{"not in the baseline", v("d", "unsafe", "double-grant"), false, "not in the baseline; observed unsafe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := b.Compare([]*results.Verdict{tc.now})
			if len(got) != 1 || got[0].Worse != tc.worse || got[0].What != tc.what {
				t.Errorf("changes %+v, want one, worse %v, %q", got, tc.worse, tc.what)
			}
		})
	}
	if got := b.Compare([]*results.Verdict{v("a", "safe"), v("b", "unsafe", "double-grant")}); len(got) != 0 {
		t.Errorf("no change, yet %+v", got)
	}
	// A kind the scenario tolerates, seen in this run only, changes nothing.
	tol := v("a", "safe", "starvation")
	tol.Tolerate = []string{"starvation"}
	if got := b.Compare([]*results.Verdict{tol}); len(got) != 0 {
		t.Errorf("a tolerated starvation counted as a change: %+v", got)
	}
	if err := b.For("otherlock"); err == nil || b.For("mylock") != nil {
		t.Errorf("For(otherlock) = %v, For(mylock) = %v; want the other lock's refused", err, b.For("mylock"))
	}
}

// TestBaseline_InconclusiveWhitelistsNothing: an inconclusive verdict
// proves nothing, so it neither records its anomalies nor lets a later
// unsafe verdict pass. Before, an entry {"observed": "inconclusive",
// "anomalies": ["double-grant"]} (what --update-baseline wrote from a run
// with an unsafe and an inconclusive trial) passed a later unsafe run as
// "inconclusive → unsafe".
func TestBaseline_InconclusiveWhitelistsNothing(t *testing.T) {
	t.Parallel()
	old := judge.Baseline{Version: 1, Subject: "mylock", Scenarios: map[string]judge.BaselineEntry{
		"a": {Observed: "inconclusive", Anomalies: []string{"double-grant"}}, // as older lockpicks wrote it
	}}
	unsafe := &results.Verdict{Scenario: "a@mylock", Observed: "unsafe", Matched: true, Anomalies: map[string]int{"double-grant": 1}}
	old.Judge(unsafe)
	if unsafe.Matched || !strings.Contains(unsafe.Gate, "inconclusive → unsafe (new: double-grant)") {
		t.Errorf("unsafe after an inconclusive entry: matched %v, gate %q; want not matched, saying what got worse", unsafe.Matched, unsafe.Gate)
	}
	safe := &results.Verdict{Scenario: "a@mylock", Observed: "safe", Matched: true}
	old.Judge(safe)
	if !safe.Matched || safe.Gate != "" {
		t.Errorf("safe after an inconclusive entry: matched %v, gate %q; want matched", safe.Matched, safe.Gate)
	}
	// Written today, the inconclusive verdict keeps no anomaly and is named.
	b, unproven := judge.NewBaseline("mylock", []*results.Verdict{
		{Scenario: "a@mylock", Observed: "inconclusive", Anomalies: map[string]int{"double-grant": 1}},
		{Scenario: "b@mylock", Observed: "unsafe", Anomalies: map[string]int{"double-grant": 1}},
	})
	if e := b.Scenarios["a"]; e.Observed != "inconclusive" || len(e.Anomalies) != 0 || len(unproven) != 1 || unproven[0] != "a" {
		t.Errorf("entry %+v, unproven %v; want inconclusive without anomalies, and a named", e, unproven)
	}
}

func TestBaseline_WriteFileReplacesAtomically(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "baseline.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := judge.NewBaseline("mylock", []*results.Verdict{{Scenario: "a@mylock", Observed: "safe"}, {Scenario: "b@mylock", Skipped: "no fit"}})
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := judge.ReadBaseline(path)
	if err != nil || len(got.Scenarios) != 1 || got.Scenarios["a"].Observed != "safe" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the folder, want the baseline alone (no temporary left)", len(entries))
	}
	if err := b.WriteFile(filepath.Join(dir, "no-such-dir", "b.json")); err == nil {
		t.Error("writing into a missing folder succeeded")
	}
}

// TestReadBaseline_Strict: a baseline with a misspelled field or an
// unknown verdict is refused. Read loosely, "scenario" for "scenarios"
// left every scenario out of it, and a run unsafe where the file said safe
// passed as "not in the baseline".
func TestReadBaseline_Strict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, want string }{
		{"ok", `{"version": 1, "subject": "mylock", "scenarios": {"a": {"observed": "safe"}, "b": {"observed": "inconclusive"}}}`, ""},
		{"misspelled field", `{"version": 1, "subject": "mylock", "scenario": {"a": {"observed": "safe"}}}`, `unknown field "scenario"`},
		{"misspelled entry field", `{"version": 1, "subject": "mylock", "scenarios": {"a": {"observed": "safe", "anomaly": ["double-grant"]}}}`, `unknown field "anomaly"`},
		{"unknown verdict", `{"version": 1, "subject": "mylock", "scenarios": {"a": {"observed": "sfae"}}}`, `scenario a: observed "sfae"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "baseline.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := judge.ReadBaseline(path)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("ReadBaseline: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("ReadBaseline: %v, want an error saying %s", err, tc.want)
			}
		})
	}
}
