package results

import (
	"strings"
	"testing"
)

func TestMatrixMarkdown_CellsLegendAndReasons(t *testing.T) {
	m := &Matrix{Trials: 20, Seed: 1, Date: "2026-11-26", WallSeconds: 600,
		Rows:    []MatrixLine{{Name: "a", Label: "lock A"}, {Name: "b", Label: "lock B"}},
		Columns: []MatrixLine{{Name: "x", Label: "fault X"}, {Name: "y", Label: "fault Y"}},
		Cells: []MatrixCell{
			{Row: "a", Column: "x", Scenario: "s1", Result: &ArmResult{Expect: "unsafe", Observed: "unsafe", Matched: true,
				Conclusive: 20, Violations: 20, Low: 0.839, High: 1, FirstViolationMedian: 2.5}},
			{Row: "a", Column: "y", Scenario: "s2", Arm: "fenced", Result: &ArmResult{Expect: "safe", Observed: "unsafe",
				Conclusive: 20, Violations: 1, Contradicts: true, Low: 0.009, High: 0.236, FirstViolationMedian: 1}},
			{Row: "b", Column: "x", Scenario: "s3", Result: &ArmResult{Expect: "safe", Observed: "inconclusive",
				Conclusive: 18, Inconclusive: 2, High: 0.176}},
			{Row: "b", Column: "y", Why: "cannot be run here"},
		}}
	md := m.Markdown()
	for _, want := range []string{
		"| lock service | fault X | fault Y |",
		"| lock A | **20/20** 84–100%, +2.50s | **1/20** 1–24%, +1.00s (!) |",
		"| lock B | 0/18 0–18%, 2 inconclusive | — (1) |",
		"1. cannot be run here",
		"- lock A × fault Y: `s2[fenced]`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if got := m.Unmatched(); len(got) != 2 {
		t.Errorf("Unmatched = %v, want the contradicted cell and the inconclusive one", got)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}
