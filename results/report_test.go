package results_test

import (
	"bytes"
	"encoding/xml"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/results"
)

func doubleGrant(t *testing.T) (checker.History, checker.Result) {
	t.Helper()
	h, err := checker.ReadFile("../checker/testdata/double-grant.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r := checker.Check(h, nil)
	if len(r.Anomalies) == 0 {
		t.Fatal("testdata double-grant has no anomaly")
	}
	return h, r
}

func TestReport_WriteHTML(t *testing.T) {
	h, r := doubleGrant(t)
	v := &results.Verdict{Scenario: "x", Expect: "unsafe", Observed: "unsafe", Matched: true, Trials: 1,
		Anomalies: map[string]int{"double-grant": 1}}
	rep := &results.Report{Verdict: v, Summary: "s", Explain: "e", Trial: 1, Timeline: results.NewTimeline(h, r), Check: r}
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if got := strings.Count(page, `class="lease"`); got < 2 {
		t.Errorf("%d lease bars, want at least 2", got)
	}
	if !strings.Contains(page, `class="overlap"`) || !strings.Contains(page, "double-grant") {
		t.Error("the double grant is neither highlighted nor named")
	}
}

func TestWriteJUnit_FailsMismatch(t *testing.T) {
	vs := []*results.Verdict{
		{Scenario: "a", Expect: "safe", Observed: "safe", Matched: true, Trials: 1},
		{Scenario: "b", Expect: "unsafe", Observed: "safe", Matched: false, Trials: 3},
	}
	var buf bytes.Buffer
	if err := results.WriteJUnit(&buf, vs, nil); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &suite); err != nil {
		t.Fatal(err)
	}
	if suite.Tests != 2 || suite.Failures != 1 {
		t.Fatalf("tests=%d failures=%d, want 2 and 1", suite.Tests, suite.Failures)
	}
}

func TestRunDir_CommitAndAbort(t *testing.T) {
	root := t.TempDir()
	d, err := results.Create(root, "run")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteJSON("a/b.json", map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "run")); !os.IsNotExist(err) {
		t.Fatal("run folder visible before Commit")
	}
	if _, err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "run", "a", "b.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Create(root, "run"); err == nil {
		t.Fatal("Create over an existing run folder succeeded")
	}
	d2, _ := results.Create(root, "other")
	d2.Abort()
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Fatalf("after Abort the root holds %d entries, want 1", len(entries))
	}
}

func TestComparison_WriteHTML(t *testing.T) {
	c := &results.Comparison{Scenario: "s", Trials: 10}
	c.Arms = append(c.Arms,
		results.NewArmResult("a", "", &results.Verdict{Trials: 10, TrialsViolated: 9}, "a"),
		results.NewArmResult("b", "", &results.Verdict{Trials: 10, TrialsViolated: 0}, "b"))
	c.AddTests()
	if c.Tests[0].P >= 0.01 {
		t.Errorf("9/10 vs 0/10: p = %g, want < 0.01", c.Tests[0].P)
	}
	var buf bytes.Buffer
	if err := c.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), `class="bar"`); got != 2 {
		t.Errorf("%d bars, want 2", got)
	}
}

// The fault table shows when a fault really healed, when it was due, and
// why a heal was late.
func TestReport_ShowsHealTimes(t *testing.T) {
	h, r := doubleGrant(t)
	v := &results.Verdict{Scenario: "x", Expect: "unsafe", Observed: "inconclusive", Trials: 1}
	due, healed, fired := 0.6, 2.3, 0.3
	ev := evidence.Evidence{Faults: []evidence.Fault{{Desc: "restart n3", At: 0.3, Fired: &fired, HealDue: &due, Healed: &healed, HealLate: "began 1.7s late"}}}
	rep := &results.Report{Verdict: v, Trial: 1, Timeline: results.NewTimeline(h, r), Check: r, Evidence: ev}
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(buf.String())
	if !strings.Contains(page, "+2.300s (due +0.600s)") || !strings.Contains(page, "late: began 1.7s late") {
		t.Error("the fault table does not show the real heal time against the due one, and why it was late")
	}
}
