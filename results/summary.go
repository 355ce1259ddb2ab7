package results

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// WriteSummary writes a Markdown table of verdicts: scenario, expectation,
// observation, trials with an anomaly and inconclusive, wall time; a
// skipped scenario's row gives the reason in place of the observation.
func WriteSummary(w io.Writer, vs []*Verdict) error {
	var b strings.Builder
	b.WriteString("| scenario | expect | observed | matched | trials | s per trial |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	var why []string
	for _, v := range vs {
		if v.Skipped != "" {
			fmt.Fprintf(&b, "| %s | — | skipped: %s | — | — | — |\n", v.Scenario, cell(v.Skipped))
			continue
		}
		m := "yes"
		if !v.Matched {
			m = "**no**"
			why = append(why, "- **"+v.Scenario+"**: "+v.Failure())
			for _, e := range v.ExampleLines() {
				why = append(why, "  - "+e)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f |\n", v.Scenario, cell(v.Expect), v.Observed, m,
			v.Tally(v.Unit()), v.WallSecondsPerTrial)
	}
	if len(why) > 0 {
		b.WriteString("\nWhy the scenarios that did not match failed:\n\n" + strings.Join(why, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell escapes s for a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// Failure says in one line why a verdict did not match: what got worse
// than the baseline, or the expectation and observation, with the first
// inconclusive trial's reason.
func (v *Verdict) Failure() string {
	msg := fmt.Sprintf("expected %s, observed %s", v.Expect, v.Observed)
	if v.Gate != "" {
		msg = v.Gate
	}
	for _, t := range v.TrialResults {
		if t.Reason != "" {
			return fmt.Sprintf("%s; %s %d inconclusive: %s", msg, v.Unit(), t.Trial, t.Reason)
		}
	}
	return msg
}

// WriteJUnit writes verdicts as a JUnit XML report: one test case per
// scenario, failed when its verdict did not match the expectation, and
// skipped, with the reason, when the scenario was not run.
func WriteJUnit(w io.Writer, vs []*Verdict, dirs []string) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      float64  `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Time     float64    `xml:"time,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	s := suite{Name: "lockpick", Tests: len(vs)}
	for i, v := range vs {
		c := testcase{Name: v.Scenario, Classname: "lockpick.scenarios", Time: v.WallSeconds}
		if v.Skipped != "" {
			s.Skipped++
			c.Skipped = &skipped{Message: v.Skipped}
			s.Cases = append(s.Cases, c)
			continue
		}
		out := fmt.Sprintf("expect %s, observed %s, %s", v.Expect, v.Observed, v.Tally(v.Unit()))
		if v.Gate != "" {
			out += "\n" + v.Gate
		}
		for _, t := range v.TrialResults {
			if t.Reason != "" {
				out += fmt.Sprintf("\n%s %d inconclusive: %s", v.Unit(), t.Trial, t.Reason)
			}
		}
		if i < len(dirs) {
			out += "\nresults: " + dirs[i]
		}
		if lines := v.ExampleLines(); len(lines) > 0 {
			out += "\n" + strings.Join(lines, "\n")
		}
		c.SystemOut = out
		if !v.Matched {
			s.Failures++
			c.Failure = &failure{Message: v.Failure(), Text: out}
		}
		s.Time += v.WallSeconds
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
