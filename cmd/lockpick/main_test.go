package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// lockpick runs the CLI in-process and returns its exit code and output.
func lockpick(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRun_UsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "no-such-scenario"},
		{"run", "--bogus", "single-baseline"},
		{"run"},
		{"run", "single-baseline", "--trials", "0"},
		{"frobnicate"},
		{"run", "--file", "testdata/bad-fault.yaml"},
		{"matrix", "--rows", "no-such-row"},
		{"matrix", "--trials", "0"},
		{"matrix", "--file", "testdata/no-such-matrix.yaml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := lockpick(t, args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; stderr == "" || lines != 1 {
				t.Errorf("stderr = %q, want one line", stderr)
			}
		})
	}
}

func TestList(t *testing.T) {
	code, out, _ := lockpick(t, "list")
	if code != exitOK || !strings.Contains(out, "failover-lock-loss") || !strings.Contains(out, "unsafe") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

func TestRun_InfraFailureIsExit3(t *testing.T) {
	// A redis-server that exits at once: the node cannot start.
	bin := t.TempDir()
	for _, name := range []string{"redis-server", "redis-sentinel"} {
		script := "#!/bin/sh\necho 'FATAL: cannot start' >&2\nexit 1\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out := t.TempDir()
	code, stdout, stderr := lockpick(t, "run", "single-baseline", "--out", out)
	wantInfraFailure(t, code, stdout, stderr, out)
	if !strings.Contains(stderr, "n1") || !strings.Contains(stderr, "log:") {
		t.Errorf("stderr %q does not name the node and its log", stderr)
	}
}

// wantInfraFailure fails unless a run exited 3, printed no verdict and left
// nothing in its results folder out.
func wantInfraFailure(t *testing.T, code int, stdout, stderr, out string) {
	t.Helper()
	if code != exitInfra {
		t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, exitInfra, stdout, stderr)
	}
	if strings.Contains(stdout, "observed") {
		t.Errorf("an infrastructure failure was reported as a verdict: %q", stdout)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a failed run left %d entries in %s", len(entries), out)
	}
}

func TestRun_SingleBaselineWritesRunFolder(t *testing.T) {
	testredis.Require(t, true)
	out := t.TempDir()
	code, stdout, stderr := lockpick(t, "run", "single-baseline", "single-baseline", "--out", out, "--seed", "7")
	if code != exitOK {
		t.Fatalf("exit %d; stdout %q stderr %q", code, stdout, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "*-single-baseline-seed7*"))
	if len(runs) != 2 {
		t.Fatalf("run folders for two runs of one scenario and seed: %v", runs)
	}
	for _, f := range []string{"scenario.json", "verdict.json", "history.jsonl", "trial-001/history.jsonl", "trial-001/nodes/n1.log"} {
		if _, err := os.Stat(filepath.Join(runs[0], f)); err != nil {
			t.Errorf("run folder lacks %s", f)
		}
	}
	if code, out, _ := lockpick(t, "check", runs[0]); code != exitOK {
		t.Errorf("check on a safe run: exit %d\n%s", code, out)
	}
	report := filepath.Join(runs[0], "report.html")
	if !strings.Contains(stdout, "report:  "+report) && !strings.Contains(stdout, "report:  "+filepath.Join(runs[1], "report.html")) {
		t.Errorf("run does not print the report's path:\n%s", stdout)
	}
	if err := os.Remove(report); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := lockpick(t, "report", runs[0]); code != exitOK {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(report); err != nil {
		t.Errorf("report did not write report.html: %v", err)
	}

	rec := httptest.NewRecorder()
	runsHandler(out).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if body := rec.Body.String(); !strings.Contains(body, filepath.Base(runs[0])) || !strings.Contains(body, "single-baseline") ||
		!strings.Contains(body, "<td>yes</td>") || !strings.Contains(body, "trials unsafe, stuck or starving") {
		t.Errorf("serve index does not list the run:\n%s", body)
	}
}

func TestCheck_ExitCodes(t *testing.T) {
	for _, tc := range []struct {
		file string
		code int
		want string
	}{
		{"../../checker/testdata/grant-after-deadline.jsonl", exitOK, "verdict ok"},
		{"../../checker/testdata/double-grant.jsonl", exitMismatch, "double-grant"},
		{"testdata/malformed.jsonl", exitUsage, "line 2"},
		{"testdata/out-of-order.jsonl", exitMismatch, "double-grant"}, // checked whole, not streamed
		{"testdata/no-grants.jsonl", exitMismatch, "inconclusive: required at least 1 grant; found 0 grants"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			code, out, errOut := lockpick(t, "check", tc.file)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d (want %d), output %q, want it to mention %q", code, tc.code, out+errOut, tc.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	testredis.Require(t, true)
	if code, _, stderr := lockpick(t, "compare", "single-baseline", "--out", t.TempDir()); code != exitUsage {
		t.Errorf("compare on a scenario without arms: exit %d (%s), want %d", code, stderr, exitUsage)
	}
	out := t.TempDir()
	code, stdout, stderr := lockpick(t, "compare", "arms", "--file", "testdata/arms.yaml", "--trials", "2", "--parallel", "2", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"two", "three", "0/2", "Fisher exact test, two vs three: p = 1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(out, "*-compare-arms-seed1"))
	if len(runs) != 1 {
		t.Fatalf("compare folders: %v", runs)
	}
	for _, f := range []string{"compare.json", "report.html", "two/verdict.json", "three/trial-002/history.jsonl"} {
		if _, err := os.Stat(filepath.Join(runs[0], f)); err != nil {
			t.Errorf("compare folder lacks %s", f)
		}
	}
}

func TestBench(t *testing.T) {
	testredis.Require(t, true)
	code, out, stderr := lockpick(t, "bench", "--ops", "50")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"set-nx", "redislock", "redlock", "redsync", "× redislock", "× redsync"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
}

// --version names the build: the module version and the executable's hash.
func TestVersion(t *testing.T) {
	code, out, stderr := lockpick(t, "--version")
	if code != exitOK || !strings.HasPrefix(out, "lockpick ") || !strings.Contains(out, "build sha256:") {
		t.Errorf("--version: exit %d, out %q, stderr %q", code, out, stderr)
	}
}

// list --suite lists that suite only; a misspelled scenario or suite gets
// a suggestion.
func TestList_SuiteAndSuggestions(t *testing.T) {
	code, out, _ := lockpick(t, "list", "--suite", "ci")
	if code != exitOK || !strings.Contains(out, "failover-lock-loss") || strings.Contains(out, "redlock-split-vote ") {
		t.Errorf("list --suite ci: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "failover-lock-los"}, `did you mean "failover-lock-loss"?`},
		{[]string{"run", "--suite", "quik"}, `did you mean "quick"?`},
		{[]string{"list", "--suite", "cj"}, `did you mean "ci"?`},
	} {
		code, _, stderr := lockpick(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestCheck_RunFolderKeepsRecordedEvidence: a trial its run recorded
// inconclusive (a fault that never fired, a lock program that stopped
// answering: nothing the history holds) is inconclusive to check too, and
// so is a history without the anomalies its run recorded in it (cut
// short). check used to judge the history alone and say "observed safe",
// exit 0, of a run that run itself failed.
func TestCheck_RunFolderKeepsRecordedEvidence(t *testing.T) {
	history, s := recordedFixture(t)
	for _, tc := range []struct {
		name      string
		ev        evidence.Evidence
		anomalies map[string]int // recorded
		code      int
		want      string
	}{
		{"inconclusive", evidence.Evidence{Reasons: []string{"fault 1 (kill n1), due at +0.3s, never fired"}}, nil, exitMismatch,
			"inconclusive: fault 1 (kill n1), due at +0.3s, never fired"},
		{"conclusive", evidence.Evidence{Conclusive: true}, nil, exitOK, "run single-baseline: expect safe, observed safe — MATCHED"},
		// a history cut short before its double grant
		{"not the run's history", evidence.Evidence{Conclusive: true}, map[string]int{"double-grant": 1}, exitMismatch,
			"inconclusive: the run recorded double-grant 1 in this trial, this history shows no anomaly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := t.TempDir()
			v := results.Verdict{Scenario: s.Name, Trials: 1, TrialResults: []results.Trial{{Trial: 1, Dir: "trial-001", Evidence: tc.ev, Anomalies: tc.anomalies}}}
			writeRunFolder(t, run, s, v, "trial-001", history)
			code, out, errOut := lockpick(t, "check", run)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d (want %d), output %q, want it to mention %q; stderr %q", code, tc.code, out, tc.want, errOut)
			}
		})
	}
}

// TestCheck_RunFolderGivesTheRunsVerdict: check of a run folder gives the
// verdict its run gave, by the run's rules and recorded evidence, with
// run's exit. Before, check rebuilt the evidence without the scenario's
// require: and tolerate:, and said "inconclusive (required at least 1
// grant)", exit 1, of failover-wait-replica, which run had MATCHED; and a
// run expected unsafe and observed unsafe exited 1 for its anomaly.
func TestCheck_RunFolderGivesTheRunsVerdict(t *testing.T) {
	for _, tc := range []struct {
		name, scenario, history, observed string
		code                              int
		want                              string
	}{
		{"a run no lock was granted in, by its requirement", "failover-wait-replica", "testdata/no-grants.jsonl", "safe", exitOK,
			"run failover-wait-replica: expect safe, observed safe — MATCHED"},
		{"a run expected unsafe", "failover-lock-loss", "../../checker/testdata/double-grant.jsonl", "unsafe", exitOK,
			"run failover-lock-loss: expect unsafe, observed unsafe — MATCHED"},
		{"a run recorded otherwise", "single-baseline", "../../checker/testdata/double-grant.jsonl", "safe", exitMismatch,
			"run single-baseline: expect safe, observed unsafe — NOT MATCHED (1/1 trials unsafe, stuck or starving)\n  the run recorded it safe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenario.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			history, err := os.ReadFile(tc.history)
			if err != nil {
				t.Fatal(err)
			}
			h, err := checker.ReadFile(tc.history)
			if err != nil {
				t.Fatal(err)
			}
			counts := judge.Counts(checker.Check(h, trial.CheckOptions(s)))
			run := t.TempDir()
			v := results.Verdict{Scenario: s.Name, Trials: 1, Expect: string(s.Expect), Observed: tc.observed,
				TrialResults: []results.Trial{{Trial: 1, Dir: "trial-001", Evidence: evidence.Evidence{Conclusive: true}, Anomalies: counts}}}
			writeRunFolder(t, run, s, v, "trial-001", history)
			code, out, errOut := lockpick(t, "check", run)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d (want %d), output %q, want it to mention %q; stderr %q", code, tc.code, out, tc.want, errOut)
			}
		})
	}
}

// recordedFixture returns a history with a grant, and the scenario the
// check tests write its run folder for.
func recordedFixture(t *testing.T) ([]byte, scenario.Scenario) {
	t.Helper()
	history, err := os.ReadFile("../../checker/testdata/grant-after-deadline.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Lookup("single-baseline")
	if err != nil {
		t.Fatal(err)
	}
	return history, s
}

// writeRunFolder writes a run folder by hand: scenario.json, verdict.json
// and history in its sub-folder trial ("" for the folder itself).
func writeRunFolder(t *testing.T, run string, s scenario.Scenario, v results.Verdict, trial string, history []byte) {
	t.Helper()
	for name, x := range map[string]any{"scenario.json": s, "verdict.json": v} {
		b, err := json.Marshal(x)
		if err == nil {
			err = os.WriteFile(filepath.Join(run, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(run, trial), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, trial, "history.jsonl"), history, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheck_SoakFolderKeepsRecordedEvidence: the whole history of a soak
// one of whose rounds was inconclusive is inconclusive to check.
func TestCheck_SoakFolderKeepsRecordedEvidence(t *testing.T) {
	history, s := recordedFixture(t)
	run := t.TempDir()
	v := results.Verdict{Scenario: s.Name, Trials: 2, Soak: &results.Soak{}, TrialResults: []results.Trial{
		{Trial: 1, Evidence: evidence.Evidence{Conclusive: true}},
		{Trial: 2, Evidence: evidence.Evidence{Reasons: []string{"required at least 10 grants; found 0 grants"}}},
	}}
	writeRunFolder(t, run, s, v, "", history)
	want := "inconclusive: round 2: required at least 10 grants; found 0 grants"
	if code, out, errOut := lockpick(t, "check", run); code != exitMismatch || !strings.Contains(out, want) {
		t.Errorf("exit %d (want %d), output %q, want it to mention %q; stderr %q", code, exitMismatch, out, want, errOut)
	}
}
