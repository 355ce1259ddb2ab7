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
	b.WriteString("| scenario | expect | observed | matched | trials with anomaly | inconclusive | s per trial |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, v := range vs {
		if v.Skipped != "" {
			fmt.Fprintf(&b, "| %s | — | skipped: %s | — | — | — | — |\n", v.Scenario, strings.ReplaceAll(v.Skipped, "|", "\\|"))
			continue
		}
		m := "yes"
		if !v.Matched {
			m = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d/%d | %d | %.2f |\n", v.Scenario, v.Expect, v.Observed, m,
			v.TrialsWithAnomaly, v.Trials, v.TrialsInconclusive, v.WallSecondsPerTrial)
	}
	_, err := io.WriteString(w, b.String())
	return err
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
		out := fmt.Sprintf("expect %s, observed %s, %d/%d trials with an anomaly, %d inconclusive", v.Expect, v.Observed,
			v.TrialsWithAnomaly, v.Trials, v.TrialsInconclusive)
		for _, t := range v.TrialResults {
			if t.Reason != "" {
				out += fmt.Sprintf("\ntrial %d inconclusive: %s", t.Trial, t.Reason)
			}
		}
		if i < len(dirs) {
			out += "\nresults: " + dirs[i]
		}
		if len(v.Examples) > 0 {
			out += "\n" + strings.Join(v.Examples, "\n")
		}
		c.SystemOut = out
		if !v.Matched {
			s.Failures++
			c.Failure = &failure{Message: fmt.Sprintf("expected %s, observed %s", v.Expect, v.Observed), Text: out}
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
