package results_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/results"
)

// Inconclusive trials are counted apart: never as violations, never as
// clean trials, and out of the rate's denominator.
func TestNewArmResult_InconclusiveApart(t *testing.T) {
	v := &results.Verdict{Trials: 10, TrialsWithAnomaly: 3, TrialsInconclusive: 4}
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
