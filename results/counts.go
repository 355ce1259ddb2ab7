package results

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CountsText writes anomaly counts by kind as "lost-update 1, stale-write
// 1" (sorted, zero counts left out), or "no anomaly".
func CountsText(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "no anomaly"
	}
	return strings.Join(parts, ", ")
}

// Tally writes a verdict's trial counts in one wording, for every place
// that prints them: "1/3 trials unsafe, stuck or starving, 1 inconclusive,
// 2 with an anomaly" (the last part only when it differs from the first
// count: an inconclusive trial's anomalies, or a tolerated kind). unit is
// "trial", or "round" for a soak.
func (v *Verdict) Tally(unit string) string {
	s := fmt.Sprintf("%d/%d %ss unsafe, stuck or starving", v.TrialsViolated, v.Trials, unit)
	if v.TrialsInconclusive > 0 {
		s += fmt.Sprintf(", %d inconclusive", v.TrialsInconclusive)
	}
	if v.TrialsWithAnomaly != v.TrialsViolated {
		s += fmt.Sprintf(", %d with an anomaly", v.TrialsWithAnomaly)
	}
	return s
}

// ExampleLines is the first anomaly of every kind, then "and N more
// anomalies" when there are more.
func (v *Verdict) ExampleLines() []string {
	out := slices.Clone(v.Examples)
	if v.ExamplesLeft > 0 {
		what := "anomalies"
		if v.ExamplesLeft == 1 {
			what = "anomaly"
		}
		out = append(out, fmt.Sprintf("and %d more %s", v.ExamplesLeft, what))
	}
	return out
}

// Unit is "round" for a soak's verdict, "trial" otherwise.
func (v *Verdict) Unit() string {
	if v.Soak != nil {
		return "round"
	}
	return "trial"
}
