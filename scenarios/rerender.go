package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/results"
)

// RunScenario reads the scenario a run folder was played with, from its
// scenario.json.
func RunScenario(runDir string) (Scenario, error) {
	var s Scenario
	return s, readRunFile(runDir, "scenario.json", &s)
}

func readRunFile(runDir, name string, into any) error {
	b, err := os.ReadFile(filepath.Join(runDir, name))
	if err != nil {
		return fmt.Errorf("%s is not a run folder: %w", runDir, err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(runDir, name), err)
	}
	return nil
}

// Rerender writes report.html and summary.md of a finished run folder again,
// from its scenario.json, verdict.json and the shown trial's history.
func Rerender(runDir string) error {
	s, err := RunScenario(runDir)
	if err != nil {
		return err
	}
	var v results.Verdict
	if err := readRunFile(runDir, "verdict.json", &v); err != nil {
		return err
	}
	shown := 0
	for i, t := range v.TrialResults {
		if t.Observed != string(Safe) {
			shown = i
			break
		}
	}
	h, err := checker.ReadFile(filepath.Join(runDir, trialDir(shown), checker.HistoryFile))
	if err != nil {
		return err
	}
	r := checker.CheckTimeout(h, CheckOptions(s), checkTimeout)
	dir := results.Existing(runDir)
	tr := TrialResult{History: h, Check: r}
	if shown < len(v.TrialResults) {
		tr.Evidence, tr.Observed, tr.Reason = v.TrialResults[shown].Evidence, v.TrialResults[shown].Observed, v.TrialResults[shown].Reason
	}
	return writeReport(dir, s, &v, tr, shown)
}
