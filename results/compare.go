package results

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// A Comparison is the outcome of `lockpick compare`: one scenario's arms,
// N trials each, with violation rates and significance tests, and each
// arm's verdict against its own expectation.
type Comparison struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Trials   int    `json:"trials"`
	// Shard is "i/n" when this comparison holds one shard of the trials:
	// its counts are partial and it has no Tests.
	Shard string      `json:"shard,omitempty"`
	Arms  []ArmResult `json:"arms"`
	// Tests compare the first arm with each other; empty for a shard.
	Tests []FisherTest `json:"tests"`
	// WallSeconds is the wall time of the whole comparison.
	WallSeconds float64 `json:"wall_seconds"`

	_ struct{} // disallow positional literals, for extensibility
}

// An ArmResult is one arm's violation rate with its 95% Wilson interval,
// over its conclusive trials only: a trial that proves nothing is counted
// apart, never as a violation nor as a clean trial.
type ArmResult struct {
	Arm     string `json:"arm"`
	Summary string `json:"summary,omitempty"`
	// Expect, Observed and Matched are the arm's verdict (its verdict.json):
	// an arm that did not match is a failure of the comparison.
	Expect   string `json:"expect"`
	Observed string `json:"observed"`
	Matched  bool   `json:"matched"`
	Trials   int    `json:"trials"`
	// Conclusive counts the trials whose verdict counts; Inconclusive the
	// others (their reasons are in the arm's verdict.json).
	Conclusive   int `json:"conclusive"`
	Inconclusive int `json:"inconclusive"`
	// Violations counts conclusive trials observed unsafe, stuck or starves.
	Violations int `json:"violations"`
	// Contradicts says the conclusive trials go against the expectation
	// (judge.Contradicts decides it); the matrix marks such a cell (!).
	Contradicts bool `json:"contradicts,omitempty"`
	// Rate is Violations / Conclusive, 0 without conclusive trials.
	Rate float64 `json:"rate"`
	Low  float64 `json:"ci95_low"`
	High float64 `json:"ci95_high"`
	// FirstViolationMedian is the median, over the violating trials, of
	// when the first violation happened, in seconds from the trial's start.
	FirstViolationMedian float64 `json:"first_violation_median_s,omitempty"`
	Dir                  string  `json:"dir"` // the arm's run folder, relative to the comparison's
}

// A FisherTest compares the violation rates of two arms.
type FisherTest struct {
	A string  `json:"a"`
	B string  `json:"b"`
	P float64 `json:"p"`
}

// NewArmResult computes an arm's rate and interval from its verdict.
func NewArmResult(arm, summary string, v *Verdict, dir string) ArmResult {
	n := v.Trials - v.TrialsInconclusive
	lo, hi := Wilson(v.TrialsViolated, n)
	return ArmResult{Arm: arm, Summary: summary, Expect: v.Expect, Observed: v.Observed, Matched: v.Matched,
		Trials: v.Trials, Conclusive: n, Inconclusive: v.TrialsInconclusive,
		Violations: v.TrialsViolated, Rate: float64(v.TrialsViolated) / float64(max(n, 1)), Low: lo, High: hi,
		FirstViolationMedian: firstViolationMedian(v.TrialResults), Dir: dir}
}

// FirstViolationText is the median first violation time, as "+1.23s",
// or "-" when no trial recorded one.
func (a ArmResult) FirstViolationText() string {
	if a.FirstViolationMedian == 0 {
		return "-"
	}
	return fmt.Sprintf("+%.2fs", a.FirstViolationMedian)
}

// firstViolationMedian is the median of the trials' first violation
// times, over the trials that recorded one; 0 if none did.
func firstViolationMedian(ts []Trial) float64 {
	var xs []float64
	for _, t := range ts {
		if t.FirstViolationSeconds > 0 {
			xs = append(xs, t.FirstViolationSeconds)
		}
	}
	return Median(xs)
}

// Inconclusive returns the number of inconclusive trials over all arms.
func (c *Comparison) Inconclusive() int {
	n := 0
	for _, a := range c.Arms {
		n += a.Inconclusive
	}
	return n
}

// Unmatched lists the arms whose verdict did not match their expectation
// (an arm with an inconclusive trial never matches), as "arm (expect X,
// observed Y)".
func (c *Comparison) Unmatched() []string {
	var out []string
	for _, a := range c.Arms {
		if !a.Matched {
			out = append(out, fmt.Sprintf("%s (expect %s, observed %s)", a.Arm, a.Expect, a.Observed))
		}
	}
	return out
}

// AddTests fills Tests with a Fisher exact test of the first arm against
// each other arm, on conclusive trials; a shard gets none, its counts being
// a part of the comparison's.
func (c *Comparison) AddTests() {
	c.Tests = nil
	if c.Shard != "" {
		return
	}
	for _, b := range c.Arms[1:] {
		a := c.Arms[0]
		p := FisherExact(a.Violations, a.Conclusive-a.Violations, b.Violations, b.Conclusive-b.Violations)
		c.Tests = append(c.Tests, FisherTest{A: a.Arm, B: b.Arm, P: p})
	}
}

// WriteTable prints the comparison as a table for a terminal.
func (c *Comparison) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s; rates over conclusive trials\n", c.heading())
	fmt.Fprintln(tw, "ARM\tEXPECT\tOBSERVED\tMATCHED\tVIOLATIONS/CONCLUSIVE\tINCONCLUSIVE\tRATE\t95% CI (Wilson)\tFIRST VIOLATION (median)")
	for _, a := range c.Arms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t", a.Arm, a.Expect, a.Observed, yesNo(a.Matched), a.Violations, a.Conclusive, a.Inconclusive)
		if a.Conclusive == 0 {
			fmt.Fprintln(tw, "-\t-\t-")
			continue
		}
		fmt.Fprintf(tw, "%.1f%%\t[%.1f%%, %.1f%%]\t%s\n", 100*a.Rate, 100*a.Low, 100*a.High, a.FirstViolationText())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.Shard != "" {
		fmt.Fprintf(w, "Shard %s: partial counts and verdicts, no Fisher test; `lockpick merge` the shards for the comparison\n", c.Shard)
	}
	c.writeArms(w)
	for _, t := range c.Tests {
		fmt.Fprintf(w, "Fisher exact test, %s vs %s: p = %.3g%s\n", t.A, t.B, t.P, significance(t.P))
	}
	if len(c.Tests) > 0 {
		fmt.Fprintln(w, c.StatsNote())
	}
	return nil
}

// writeArms says what each arm does, for the arms that say it.
func (c *Comparison) writeArms(w io.Writer) {
	for _, a := range c.Arms {
		if a.Summary != "" {
			fmt.Fprintf(w, "  %s: %s\n", a.Arm, a.Summary)
		}
	}
}

// StatsNote says how to read the Fisher tests: what each compares, the
// threshold, the lack of correction across tests, and what the rates are.
func (c *Comparison) StatsNote() string {
	k := len(c.Tests)
	note := fmt.Sprintf("(Each test is two-sided, the first arm, %s, against one other, on conclusive trials; "+
		"\"different\" means p < 0.01, a threshold chosen beforehand, stricter than the usual 0.05.", c.Arms[0].Arm)
	if k > 1 {
		note += fmt.Sprintf(" %d tests are made and none is corrected for the others: for all %d together at 0.01, read p < %.2g (Bonferroni).", k, k, 0.01/float64(k))
	}
	return note + " The rates are those of this scripted attack, repeated; they are not rates of a lock in production.)"
}

// heading says what the comparison holds: all trials, or one shard's.
func (c *Comparison) heading() string {
	if c.Shard != "" && len(c.Arms) > 0 {
		return fmt.Sprintf("%s: shard %s, %d of %d trials per arm (partial)", c.Scenario, c.Shard, c.Arms[0].Trials, c.Trials)
	}
	return fmt.Sprintf("%s: %d trials per arm", c.Scenario, c.Trials)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func significance(p float64) string {
	switch {
	case p < 0.01:
		return " (different, p < 0.01)"
	case p < 0.05:
		return " (different, p < 0.05)"
	}
	return " (no significant difference)"
}
