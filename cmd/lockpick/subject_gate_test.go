package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/lazyfs"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
)

// verdict is a run's verdict of the subject extlock, judged as the run
// judges it: expecting a conclusive verdict, and by base if it is set.
func verdict(base *judge.Baseline, name, observed string, anomalies ...string) *results.Verdict {
	v := &results.Verdict{Scenario: name + "@extlock", Expect: evidence.Conclusive, Trials: 1, Anomalies: map[string]int{}}
	v.Observed, v.Matched = observed, judge.Matches(judge.Conclusive, observed)
	for _, a := range anomalies {
		v.Anomalies[a]++
	}
	if base != nil {
		base.Judge(v)
	}
	return v
}

// exitCode returns the exit code an error of runScenarios ends with.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	if err != nil {
		return -1
	}
	return exitOK
}

// TestSubjectRun_Baseline: a subject is judged by its own baseline, not the
// scenario's expectation: worse is exit 1, printed; better is exit 0, printed.
func TestSubjectRun_Baseline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "baseline.json")
	// It was safe in single-baseline and showed a double grant in
	// failover-lock-loss; skipped scenarios stay out of the baseline.
	skipped := []*results.Verdict{{Scenario: "failover-wait-replica@extlock", Skipped: "sets wait_replicas"}}
	f := runFlags{update: file, junit: filepath.Join(dir, "first.xml")}
	var out bytes.Buffer
	err := finishSubjectRun(&out, f, "extlock", nil, []*results.Verdict{verdict(nil, "single-baseline", "safe"),
		verdict(nil, "failover-lock-loss", "unsafe", "double-grant")}, nil, skipped)
	if exitCode(err) != exitOK || !strings.Contains(out.String(), "baseline written: "+file) {
		t.Fatalf("writing the baseline: %v; %q", err, out.String())
	}
	b, err := judge.ReadBaseline(file)
	if err != nil || len(b.Scenarios) != 2 || b.Scenarios["failover-lock-loss"].Observed != "unsafe" || b.Subject != "extlock" {
		t.Fatalf("baseline %+v, %v", b, err)
	}
	if junit, _ := os.ReadFile(f.junit); !bytes.Contains(junit, []byte(`<skipped message="sets wait_replicas">`)) {
		t.Errorf("JUnit has no skipped test case:\n%s", junit)
	}

	// Now single-baseline shows a double grant, and failover-lock-loss is safe.
	f = runFlags{baseline: file, junit: filepath.Join(dir, "second.xml")}
	out.Reset()
	now := []*results.Verdict{verdict(&b, "single-baseline", "unsafe", "double-grant"), verdict(&b, "failover-lock-loss", "safe")}
	err = finishSubjectRun(&out, f, "extlock", &b, now, nil, nil)
	if exitCode(err) != exitMismatch {
		t.Errorf("a baseline that got worse: exit %d (%v), want %d", exitCode(err), err, exitMismatch)
	}
	for _, want := range []string{"single-baseline: safe → unsafe (new: double-grant) — WORSE", "failover-lock-loss: unsafe → safe (gone: double-grant)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q does not say %q", out.String(), want)
		}
	}
	if junit, _ := os.ReadFile(f.junit); bytes.Count(junit, []byte("<failure")) != 1 || !bytes.Contains(junit, []byte(`failures="1"`)) {
		t.Errorf("JUnit: want one failure, single-baseline's:\n%s", junit)
	}

	// Better only is exit 0; inconclusive is never ok, baseline or not.
	out.Reset()
	err = finishSubjectRun(&out, runFlags{}, "extlock", &b, []*results.Verdict{verdict(&b, "failover-lock-loss", "safe")}, nil, nil)
	if exitCode(err) != exitOK {
		t.Errorf("an improvement: exit %d (%v), want 0; %q", exitCode(err), err, out.String())
	}
	err = finishSubjectRun(&out, runFlags{}, "extlock", nil, []*results.Verdict{verdict(nil, "failover-lock-loss", "inconclusive")}, nil, nil)
	if exitCode(err) != exitMismatch {
		t.Errorf("an inconclusive verdict without a baseline: exit %d, want %d", exitCode(err), exitMismatch)
	}
}

// TestSubjectRun_InconclusiveBaselineWhitelistsNothing: a run with an
// unsafe and an inconclusive trial is inconclusive (exit 1); the baseline
// it writes must not let a later unsafe run pass. Before, it recorded
// {"observed": "inconclusive", "anomalies": ["double-grant"]}, and the
// later run passed as "inconclusive → unsafe", exit 0. The gate's reason
// reaches JUnit and the summary, not only stdout.
func TestSubjectRun_InconclusiveBaselineWhitelistsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "baseline.json")
	var out bytes.Buffer
	first := verdict(nil, "gc-pause-fenced", "inconclusive", "double-grant")
	err := finishSubjectRun(&out, runFlags{update: file}, "extlock", nil, []*results.Verdict{first}, nil, nil)
	if exitCode(err) != exitMismatch || !strings.Contains(out.String(), "not recorded, inconclusive") || !strings.Contains(out.String(), "gc-pause-fenced") {
		t.Fatalf("writing a baseline from an inconclusive run: exit %d, %q; want 1, naming what it could not record", exitCode(err), out.String())
	}
	b, err := judge.ReadBaseline(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []judge.Baseline{b, {Version: 1, Subject: "extlock", Scenarios: map[string]judge.BaselineEntry{
		"gc-pause-fenced": {Observed: "inconclusive", Anomalies: []string{"double-grant"}}}}} { // as older lockpicks wrote it
		f := runFlags{junit: filepath.Join(dir, "j.xml"), summary: filepath.Join(dir, "s.md")}
		out.Reset()
		err = finishSubjectRun(&out, f, "extlock", &base, []*results.Verdict{verdict(&base, "gc-pause-fenced", "unsafe", "double-grant")}, nil, nil)
		if exitCode(err) != exitMismatch || !strings.Contains(out.String(), "inconclusive → unsafe (new: double-grant) — WORSE") {
			t.Errorf("unsafe after an inconclusive baseline %+v: exit %d, %q; want 1, WORSE", base.Scenarios, exitCode(err), out.String())
		}
		junit, _ := os.ReadFile(f.junit)
		summary, _ := os.ReadFile(f.summary)
		for name, b := range map[string][]byte{"JUnit": junit, "summary": summary} {
			if !bytes.Contains(b, []byte("worse than the baseline: inconclusive → unsafe (new: double-grant)")) {
				t.Errorf("%s does not say what got worse:\n%s", name, b)
			}
		}
	}
}

// TestApplySubject_SkipsWhatDoesNotFit: a suite run with a subject skips,
// with the reason, the scenarios the subject does not fit; if none fits,
// the run is a usage error.
func TestApplySubject_SkipsWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	var list []scenario.Scenario
	for _, n := range []string{"single-baseline", "naive-setnx-expire-crash", "failover-wait-replica"} {
		s, err := scenario.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, s)
	}
	run, skipped, err := applySubject(list, "", "true", "")
	if err != nil {
		t.Fatal(err)
	}
	// wait_replicas configures lockpick's set-nx only: the program runs
	// without it; crash_after_setnx is the attack, which it cannot meet.
	if len(run) != 2 || run[0].Name != "single-baseline@true" || run[1].Name != "failover-wait-replica@true" ||
		len(run[1].Dropped) == 0 || !strings.Contains(run[1].Dropped[0], "wait_replicas") {
		t.Errorf("run %d scenarios, want single-baseline@true and failover-wait-replica@true without its wait_replicas", len(run))
	}
	if len(skipped) != 1 || skipped[0].Scenario != "naive-setnx-expire-crash@true" || !strings.Contains(skipped[0].Skipped, "crash_after_setnx") {
		t.Fatalf("skipped %+v, want naive-setnx-expire-crash, for its crash_after_setnx", skipped)
	}
	// A program declared a Redlock is skipped on a master with replicas
	// for its shape, before its settings are looked at.
	if run, sk, err := applySubject(list, "", "true", scenario.ShapeRedlock); err != nil || len(run) != 1 || len(sk) != 2 ||
		!strings.Contains(sk[1].Skipped, "replicas that sentinels promote") {
		t.Errorf("--subject-shape redlock: ran %d, skipped %+v, %v; want failover-wait-replica skipped for its replicas", len(run), sk, err)
	}
	for _, bad := range [][2]string{{"", scenario.ShapeSingle}, {"true", "consul"}} {
		if _, _, err := applySubject(list, "", bad[0], bad[1]); err == nil {
			t.Errorf("--subject-cmd %q --subject-shape %q accepted", bad[0], bad[1])
		}
	}
	var buf bytes.Buffer
	if err := results.WriteSummary(&buf, skipped); err != nil || !strings.Contains(buf.String(), "| naive-setnx-expire-crash@true | — | skipped: ") {
		t.Errorf("summary %q, %v: want a skipped row", buf.String(), err)
	}

	code, stdout, stderr := lockpick(t, "run", "naive-setnx-expire-crash", "--subject-cmd", "true", "--out", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "run: --subject-cmd: no scenario fits") || stdout != "" {
		t.Errorf("every scenario skipped: exit %d, stderr %q; want %d saying no scenario fits", code, stderr, exitUsage)
	}
}

// TestRun_SubjectSkipsWhatDoesNotFit runs two scenarios with a subject
// that fits one: the other is skipped with its reason, in the output, the
// JUnit file and the summary, and the run is judged on the one it ran. Not
// parallel: a run ends with cluster.KillAll.
func TestRun_SubjectSkipsWhatDoesNotFit(t *testing.T) {
	testredis.Require(t, true)
	dir := t.TempDir()
	junit, summary := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.md")
	code, stdout, stderr := lockpick(t, "run", "single-baseline", "redlock-baseline", "--subject", "redislock",
		"--junit", junit, "--summary", summary, "--out", filepath.Join(dir, "runs"), "-q")
	if code != exitOK {
		t.Fatalf("exit %d; stdout %q stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "redlock-baseline@redislock: skipped: it is a single-instance lock") || !strings.Contains(stdout, "single-baseline@redislock: observed safe") {
		t.Errorf("stdout %q: want redlock-baseline skipped and single-baseline run", stdout)
	}
	if b, _ := os.ReadFile(junit); !bytes.Contains(b, []byte(`skipped="1"`)) || !bytes.Contains(b, []byte(`<skipped message="it is a single-instance lock`)) {
		t.Errorf("JUnit without the skipped case:\n%s", b)
	}
	if b, _ := os.ReadFile(summary); !bytes.Contains(b, []byte("| redlock-baseline@redislock | — | skipped: it is a single-instance lock")) {
		t.Errorf("summary without the skipped row:\n%s", b)
	}
}

// TestSubjectRun_BaselineOfAnotherLock: a baseline written for another
// lock says nothing about this one; the run refuses it before any trial.
func TestSubjectRun_BaselineOfAnotherLock(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "baseline.json")
	if b, _ := judge.NewBaseline("otherlock", nil); b.WriteFile(file) != nil {
		t.Fatal("write the baseline")
	}
	f := runFlags{trials: 1, parallel: 1, backend: "process", out: t.TempDir(), subject: "redislock", baseline: file}
	err := runScenarios(context.Background(), io.Discard, []string{"single-baseline"}, f)
	if exitCode(err) != exitUsage || !strings.Contains(fmt.Sprint(err), "written for otherlock") {
		t.Fatalf("a baseline of another lock: exit %d (%v), want %d naming it", exitCode(err), err, exitUsage)
	}
}

// Without FUSE, a run skips the scenarios that cut power, saying why, and
// runs the others.
func TestSkipWithoutFUSE(t *testing.T) {
	var list []scenario.Scenario
	for _, n := range []string{"single-baseline", "redlock-power-loss", "etcd-power-loss"} {
		s, err := scenario.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, s)
	}
	keep, skipped := skipWithoutFUSE(list, nil, lazyfs.ErrNoFUSE)
	if len(keep) != 1 || keep[0].Name != "single-baseline" {
		t.Errorf("kept %d scenarios, want single-baseline alone", len(keep))
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0].Skipped, "FUSE") {
		t.Errorf("skipped %+v, want the two power-loss scenarios, with FUSE in the reason", skipped)
	}
	if keep, skipped := skipWithoutFUSE(list, nil, nil); len(keep) != 3 || len(skipped) != 0 {
		t.Errorf("with FUSE: kept %d, skipped %d; want 3 and 0", len(keep), len(skipped))
	}
}
