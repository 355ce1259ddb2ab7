package campaign

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/trial"
)

// A Checked is a history checked again, and what it shows.
type Checked struct {
	Result  checker.Result
	Summary checker.Summary
	judge.Observation
}

// CheckHistory checks the history at path (streamed in flat memory, read
// whole only where the stream cannot give Check's result; searches bounded
// by timeout) and judges it: by what its run recorded of it (its evidence,
// its scenario's rules and options, its anomaly counts) when it is in a run
// folder, so it is the run's own observation; else by the history alone,
// which proves only that a lock was granted. maxTTL, when set, replaces
// the run's checker options, and the recorded counts are then not compared.
func CheckHistory(path string, timeout, maxTTL time.Duration) (Checked, error) {
	opt, rules, err := historyOptions(path, maxTTL)
	if err != nil {
		return Checked{}, err
	}
	r, sum, err := checker.CheckFile(path, opt, timeout)
	if err != nil {
		return Checked{}, err // it names the file
	}
	c := Checked{Result: r, Summary: sum}
	rec, recorded, err := RecordedTrial(path)
	switch {
	case err != nil:
		return c, err
	case recorded:
		rec.Counted = rec.Counted && maxTTL == 0
		c.Observation = judge.Again(rules, r, rec)
	default:
		c.Observation = judge.Trial(rules, r, evidence.Evaluate(evidence.Input{History: grants(sum), Result: r}))
	}
	return c, nil
}

// CheckRun gives run's verdict again from its trials' histories checked
// again (by trial folder, from [CheckHistory]); an error when the folder
// does not hold every trial's history. A verdict judged by a baseline at
// run time keeps its expectation and its gate: the folder has no baseline.
func CheckRun(run *Run, byTrial map[string]Checked) (*results.Verdict, error) {
	trials := slices.Clone(run.Verdict.TrialResults)
	if len(byTrial) != len(trials) {
		return nil, fmt.Errorf("verdict.json lists %d trials, the folder holds %d histories: not the run's folder", len(trials), len(byTrial))
	}
	checks := make([]checker.Result, len(trials))
	for i, t := range trials {
		c, ok := byTrial[t.Dir]
		if !ok {
			return nil, fmt.Errorf("verdict.json lists trial %d in %s, which holds no history", t.Trial, t.Dir)
		}
		trials[i].Observed, trials[i].Reason, checks[i] = c.Observed, c.Reason, c.Result
	}
	v := judge.Run(run.Scenario.Name, run.Scenario.Rules(), run.Verdict.Seed, trials, checks)
	if run.Verdict.Gate != "" {
		v.Expect, v.Matched, v.Gate = run.Verdict.Expect, false, run.Verdict.Gate
	}
	v.Shard, v.WallSeconds, v.WallSecondsPerTrial = run.Verdict.Shard, run.Verdict.WallSeconds, run.Verdict.WallSecondsPerTrial
	return v, nil
}

// historyOptions returns the checker options and the judging rules `lockpick
// run` used for the history at path: from the scenario.json of its run
// folder (the folder of the history, or its parent for a trial's); maxTTL
// overrides the options. Outside a run folder the rules are the empty ones.
func historyOptions(path string, maxTTL time.Duration) (*checker.Options, judge.Rules, error) {
	dir := filepath.Dir(path)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if _, err := os.Stat(filepath.Join(d, "scenario.json")); err != nil {
			continue
		}
		s, err := RunScenario(d)
		if err != nil {
			return nil, judge.Rules{}, err
		}
		if maxTTL > 0 {
			return &checker.Options{MaxTTL: maxTTL}, s.Rules(), nil
		}
		return trial.CheckOptions(s), s.Rules(), nil
	}
	if maxTTL > 0 {
		return &checker.Options{MaxTTL: maxTTL}, judge.Rules{}, nil
	}
	return nil, judge.Rules{}, nil
}

// grants returns what evidence.Evaluate asks of a history that is not
// held: without faults or requirements, it looks in the history only for
// a grant (an ok acquire at or after time 0), and the latest grant is at
// or after time 0 if any is.
func grants(sum checker.Summary) checker.History {
	if sum.Grant == nil {
		return nil
	}
	return checker.History{*sum.Grant}
}
