package trial

import (
	"os"
	"path/filepath"

	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
)

// WriteReport renders report.html and summary.md for a run, showing trial t
// with the result tr.
func WriteReport(dir *results.RunDir, s scenario.Scenario, v *results.Verdict, tr TrialResult, t results.Trial) error {
	r := &results.Report{Verdict: v, Summary: s.Summary, Explain: s.Explain, Trial: t.Trial,
		Timeline: results.NewTimeline(tr.History, tr.Check), Check: tr.Check, Evidence: tr.Evidence}
	vis := filepath.Join(t.Dir, "linearizability.html")
	if _, err := os.Stat(dir.Path(vis)); err == nil {
		r.Visualization = vis
	}
	if err := r.WriteHTMLFile(dir.Path("report.html")); err != nil {
		return err
	}
	f, err := os.Create(dir.Path("summary.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	return results.WriteSummary(f, []*results.Verdict{v})
}
