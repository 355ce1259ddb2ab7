package campaign

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// RunScenario reads the scenario a run folder was played with, from its
// scenario.json.
func RunScenario(runDir string) (scenario.Scenario, error) {
	var s scenario.Scenario
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
// from its scenario.json, verdict.json and the shown trial's history; a
// matrix's folder gets its matrix.md again, from matrix.json.
func Rerender(runDir string) error {
	if IsMatrix(runDir) {
		var m results.Matrix
		if err := readRunFile(runDir, "matrix.json", &m); err != nil {
			return err
		}
		for _, c := range m.Cells { // judged again: a matrix.json of before the field has none
			if c.Result != nil {
				c.Result.Contradicts = judge.Contradicts(*c.Result)
			}
		}
		return os.WriteFile(filepath.Join(runDir, "matrix.md"), []byte(m.Markdown()), 0o644)
	}
	s, err := RunScenario(runDir)
	if err != nil {
		return err
	}
	var v results.Verdict
	if err := readRunFile(runDir, "verdict.json", &v); err != nil {
		return err
	}
	if len(v.TrialResults) == 0 {
		return fmt.Errorf("%s: verdict.json lists no trial", runDir)
	}
	if v.Soak != nil {
		return rerenderSoak(runDir, s, &v)
	}
	t := v.TrialResults[trial.ShownTrial(v.TrialResults)]
	tr, err := readTrial(runDir, s, t)
	if err != nil {
		return err
	}
	return trial.WriteReport(results.Existing(runDir), s, &v, tr, t)
}

// IsMatrix reports whether runDir is a matrix's run folder.
func IsMatrix(runDir string) bool {
	_, err := os.Stat(filepath.Join(runDir, "matrix.json"))
	return err == nil
}

// rerenderSoak renders a soak's report again, on its first anomaly as the
// soak did, from that round's window; without one (no anomaly) it shows
// the last round without its timeline: a soak keeps no other round's
// events apart from history.jsonl.gz.
func rerenderSoak(runDir string, s scenario.Scenario, v *results.Verdict) error {
	t := v.TrialResults[len(v.TrialResults)-1]
	for _, r := range v.TrialResults {
		if r.Trial == v.Soak.FirstAnomaly && r.Dir != "" {
			t = r
			tr, err := readTrial(runDir, s, t)
			if err != nil {
				return err
			}
			return trial.WriteReport(results.Existing(runDir), s, v, tr, t)
		}
	}
	tr := trial.TrialResult{Seed: t.Seed, Evidence: t.Evidence, Observed: t.Observed, Reason: t.Reason}
	return trial.WriteReport(results.Existing(runDir), s, v, tr, t)
}

// readTrial reads back the history of trial t of a run folder and checks it
// again, with t's evidence and verdict.
func readTrial(runDir string, s scenario.Scenario, t results.Trial) (trial.TrialResult, error) {
	h, err := checker.ReadFile(filepath.Join(runDir, t.Dir, checker.HistoryFile))
	if err != nil {
		return trial.TrialResult{}, err
	}
	r := checker.CheckTimeout(h, trial.CheckOptions(s), trial.CheckTimeout)
	return trial.TrialResult{Seed: t.Seed, History: h, Check: r, Evidence: t.Evidence, Observed: t.Observed, Reason: t.Reason}, nil
}

// RecordedTrial returns what a run recorded of the history at path. For a
// trial's history (run/trial-NNN/history.jsonl, a soak's
// run/round-NNN/history.jsonl) it is that trial's; for the run folder's own
// history, the shown trial's; for a soak's whole history, every round's
// evidence (inconclusive if one round is, with each round's reasons) and
// no counts, since it was judged round by round. ok is false when path is
// not in a run folder with a verdict.json that covers it.
func RecordedTrial(path string) (rec judge.Record, ok bool, err error) {
	if base := filepath.Base(path); base == checker.HistoryFile || base == checker.HistoryFileGz {
		if rec, ok, err := folderRecord(filepath.Dir(path)); ok || err != nil {
			return rec, ok, err
		}
	}
	trialDir := filepath.Dir(path)
	v, ok, err := recordedVerdict(filepath.Dir(trialDir))
	if !ok {
		return rec, false, err
	}
	for _, t := range v.TrialResults {
		if t.Dir != "" && t.Dir == filepath.Base(trialDir) {
			return judge.RecordOf(t), true, nil
		}
	}
	return rec, false, nil
}

// folderRecord is [RecordedTrial] of run folder dir's own history.
func folderRecord(dir string) (rec judge.Record, ok bool, err error) {
	v, ok, err := recordedVerdict(dir)
	if !ok || len(v.TrialResults) == 0 {
		return rec, false, err
	}
	if v.Soak == nil {
		t := v.TrialResults[trial.ShownTrial(v.TrialResults)]
		return judge.RecordOf(t), true, nil
	}
	rec.Evidence.Conclusive = true
	for _, t := range v.TrialResults {
		if !t.Evidence.Conclusive {
			rec.Evidence.Conclusive = false
			rec.Evidence.Reasons = append(rec.Evidence.Reasons, fmt.Sprintf("round %d: %s", t.Trial, strings.Join(t.Evidence.Reasons, "; ")))
		}
	}
	return rec, true, nil
}

// A Run is what a run folder recorded: its scenario and its verdict.
type Run struct {
	Scenario scenario.Scenario
	Verdict  results.Verdict
}

// ReadRun reads run folder dir's scenario.json and verdict.json; nil when
// dir has no verdict.json (not a run folder, or a comparison's).
func ReadRun(dir string) (*Run, error) {
	v, ok, err := recordedVerdict(dir)
	if !ok || err != nil {
		return nil, err
	}
	s, err := RunScenario(dir)
	if err != nil {
		return nil, err
	}
	return &Run{s, v}, nil
}

// recordedVerdict reads run folder dir's verdict.json; ok is false when it
// has none.
func recordedVerdict(dir string) (v results.Verdict, ok bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, "verdict.json")); err != nil {
		return v, false, nil
	}
	if err := readRunFile(dir, "verdict.json", &v); err != nil {
		return v, false, err
	}
	return v, true, nil
}
