package results_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/results"
)

// Inconclusive trials are counted apart: never as violations, never as
// clean trials, and out of the rate's denominator.
func TestNewArmResult_InconclusiveApart(t *testing.T) {
	v := &results.Verdict{Trials: 10, TrialsViolated: 3, TrialsInconclusive: 4}
	a := results.NewArmResult("a", "", v, "a")
	if a.Conclusive != 6 || a.Inconclusive != 4 || a.Violations != 3 || a.Rate != 0.5 {
		t.Errorf("arm = %+v, want 3 violations of 6 conclusive, 4 inconclusive, rate 0.5", a)
	}
	lo, hi := results.Wilson(3, 6)
	if a.Low != lo || a.High != hi {
		t.Errorf("interval [%v, %v], want Wilson(3, 6) = [%v, %v]", a.Low, a.High, lo, hi)
	}
	c := &results.Comparison{Scenario: "s", Trials: 10, Arms: []results.ArmResult{a,
		results.NewArmResult("b", "", &results.Verdict{Trials: 10, TrialsInconclusive: 10}, "b")}}
	c.AddTests()
	if got := c.Inconclusive(); got != 14 {
		t.Errorf("Inconclusive() = %d, want 14", got)
	}
	var out bytes.Buffer
	if err := c.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"VIOLATIONS/CONCLUSIVE", "3/6", "50.0%", "0/0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if p := c.Tests[0].P; p != 1 {
		t.Errorf("Fisher test against an arm with no conclusive trial: p = %v, want 1", p)
	}
}

// A shard's comparison is labelled partial and carries no Fisher test: its
// 2 trials per arm are not a conclusion.
func TestComparison_ShardIsPartial(t *testing.T) {
	c := &results.Comparison{Scenario: "s", Trials: 8, Shard: "1/4", Arms: []results.ArmResult{
		results.NewArmResult("a", "", &results.Verdict{Trials: 2, TrialsViolated: 2, Expect: "unsafe", Observed: "unsafe", Matched: true}, "a"),
		results.NewArmResult("b", "", &results.Verdict{Trials: 2, Expect: "safe", Observed: "safe", Matched: true}, "b")}}
	c.AddTests()
	if len(c.Tests) != 0 {
		t.Errorf("a shard has Fisher tests %+v", c.Tests)
	}
	var out, page bytes.Buffer
	if err := c.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shard 1/4, 2 of 8 trials per arm (partial)", "no Fisher test"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "p = ") || !strings.Contains(page.String(), "partial counts") || strings.Contains(page.String(), "Fisher exact test,") {
		t.Errorf("a shard's table or page reads as a conclusion:\n%s\n%s", out.String(), page.String())
	}
}

// An arm whose verdict did not match is a failure in the table, the page
// and Unmatched alike.
func TestComparison_UnmatchedArm(t *testing.T) {
	c := &results.Comparison{Scenario: "s", Trials: 2, Arms: []results.ArmResult{
		results.NewArmResult("fix", "", &results.Verdict{Trials: 2, Expect: "unsafe", Observed: "safe"}, "fix"),
		results.NewArmResult("bug", "", &results.Verdict{Trials: 2, TrialsViolated: 2, Expect: "unsafe", Observed: "unsafe", Matched: true}, "bug")}}
	c.AddTests()
	if got := c.Unmatched(); len(got) != 1 || got[0] != "fix (expect unsafe, observed safe)" {
		t.Errorf("Unmatched() = %q", got)
	}
	var out, page bytes.Buffer
	if err := c.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "NO") || !strings.Contains(page.String(), "NOT matched") {
		t.Errorf("the unmatched arm is not shown as such:\n%s\n%s", out.String(), page.String())
	}
}

// Build identifies the running executable by its bytes, so shards of two
// "(devel)" builds do not pass for one.
func TestBuild_IsTheExecutablesHash(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	sum, err := results.FileSHA256(exe)
	if err != nil {
		t.Fatal(err)
	}
	if got := results.Build(); got != "sha256:"+sum {
		t.Errorf("Build() = %q, want sha256:%s", got, sum)
	}
}

// The table says what each arm does and how to read the tests: which arms
// each compares, the threshold, and the correction it does not make.
func TestWriteTable_ExplainsArmsAndTests(t *testing.T) {
	arm := func(name, summary string, bad int) results.ArmResult {
		return results.NewArmResult(name, summary, &results.Verdict{Trials: 20, TrialsViolated: bad}, name)
	}
	c := &results.Comparison{Scenario: "s", Trials: 20, Arms: []results.ArmResult{
		arm("no-delay", "", 20), arm("delayed-restart", "n3 stays down past the TTL", 0), arm("fsync-always", "every write fsynced", 0)}}
	c.AddTests()
	var out bytes.Buffer
	if err := c.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"delayed-restart: n3 stays down past the TTL", "fsync-always: every write fsynced",
		"two-sided, the first arm, no-delay, against one other", "p < 0.01", "2 tests", "p < 0.005 (Bonferroni)", "not rates of a lock in production"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	c.Arms = c.Arms[:2]
	c.AddTests()
	if note := c.StatsNote(); strings.Contains(note, "Bonferroni") {
		t.Errorf("one test needs no correction, note says %q", note)
	}
}
