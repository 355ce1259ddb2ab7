package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

func newCheckCmd() *cobra.Command {
	var timeout, maxTTL time.Duration
	cmd := &cobra.Command{
		Use:   "check PATH",
		Short: "Check a history.jsonl (or every trial of a run folder) and print its anomalies",
		Long: `Check reads a history in lockpick's JSON-lines format (docs/history.md;
gzipped or not;
histories recorded by other tools work too), runs every checker and prints
the anomalies. Inside a run folder it checks with the options the run used
(the scenario's TTL, from scenario.json); elsewhere --max-ttl sets how long
an acquire with an unknown outcome may hold the lock (default: the longest
lease in the history).
A history in time order is checked as a stream, in flat memory, with no
search to time out; one that is not (or one with a lost update to explain)
is read whole and checked with linearizability searches bounded by
--timeout.
Exit 0: no anomaly; 1: anomalies, a search that timed out (verdict
unknown), or a history that proves nothing (no lock was ever granted,
completions without their invoke, or, in a run folder, a trial its run
recorded inconclusive or with anomalies this history lacks); 2: a
malformed file (with its line number).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := historyPaths(args[0])
			if err != nil {
				return usageError(err.Error())
			}
			out := cmd.OutOrStdout()
			run, err := recordedRun(args[0])
			if err != nil {
				return usageError(err.Error())
			}
			failed := 0
			byTrial := map[string]checkedTrial{} // by trial folder
			for _, p := range paths {
				r, o, err := checkHistory(out, p, timeout, maxTTL)
				if err != nil {
					return err
				}
				byTrial[filepath.Base(filepath.Dir(p))] = checkedTrial{r, o}
				if r.Verdict != checker.Ok || o.Observed == judge.Inconclusive {
					failed++
				}
			}
			if run != nil {
				return run.verdict(out, byTrial)
			}
			if failed > 0 {
				return &exitError{code: exitMismatch}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "give up the linearizability searches of a history checked whole after this long (verdict unknown)")
	cmd.Flags().DurationVar(&maxTTL, "max-ttl", 0, "longest lease an acquire with an unknown outcome may hold (default: the run's TTL, or the longest lease seen)")
	return cmd
}

// checkHistory checks the history at path, prints what it shows, and
// returns the check and the observation: by what the history's run
// recorded of it (its evidence, its scenario's rules, its anomaly counts)
// when it is in a run folder, so it is the run's own; else by the history
// alone, which proves only that a lock was granted.
func checkHistory(out io.Writer, path string, timeout, maxTTL time.Duration) (checker.Result, judge.Observation, error) {
	opt, rules, err := checkOptions(path, maxTTL)
	if err != nil {
		if err := validHistory(path); err != nil {
			return checker.Result{}, judge.Observation{}, usageError(err.Error()) // the history's own error comes first
		}
		return checker.Result{}, judge.Observation{}, usageError(err.Error())
	}
	// Streamed in flat memory; read whole only if the stream cannot give
	// Check's exact result (docs/history.md).
	r, sum, err := checker.CheckFile(path, opt, timeout)
	if err != nil {
		return r, judge.Observation{}, usageError(err.Error()) // it names the file
	}
	rec, recorded, err := campaign.RecordedTrial(path)
	if err != nil {
		return r, judge.Observation{}, usageError(err.Error())
	}
	var o judge.Observation
	if recorded {
		rec.Counted = rec.Counted && maxTTL == 0 // checked with the run's own options
		o = judge.Again(rules, r, rec)
	} else {
		o = judge.Trial(rules, r, evidence.Evaluate(evidence.Input{History: grants(sum), Result: r}))
	}
	// The observation in run's words, then the checker's own verdict.
	fmt.Fprintf(out, "%s: %d events, observed %s (checker verdict %s; %s)\n", path, sum.Events, o.Observed, r.Verdict, sum.Path())
	for _, a := range r.Anomalies {
		fmt.Fprintf(out, "  %s: %s\n", a.Kind, wrap(a.Message, 96, "    "))
	}
	if o.Reason != "" {
		fmt.Fprintf(out, "  inconclusive: %s\n", wrap(o.Reason, 96, "    "))
	}
	return r, o, nil
}

// A checkedRun is the run folder `lockpick check` was given, with what it
// recorded: check gives that run's verdict again from its histories.
type checkedRun struct {
	dir string
	s   scenario.Scenario
	v   results.Verdict
}

// recordedRun returns the run folder at path, or nil when path is a
// history file, a soak's folder (judged round by round, as one history
// here) or not a run folder.
func recordedRun(path string) (*checkedRun, error) {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return nil, nil
	}
	rec, err := campaign.ReadRun(path)
	if err != nil || rec == nil || rec.Verdict.Soak != nil {
		return nil, err
	}
	return &checkedRun{path, rec.Scenario, rec.Verdict}, nil
}

// A checkedTrial is a trial's history checked again, and what it shows.
type checkedTrial struct {
	r checker.Result
	o judge.Observation
}

// verdict prints the run's verdict from its trials checked again, by
// trial folder, and returns its exit: 0 when it matches, as run's was.
func (c *checkedRun) verdict(out io.Writer, byTrial map[string]checkedTrial) error {
	trials := slices.Clone(c.v.TrialResults)
	checks := make([]checker.Result, len(trials))
	for i, t := range trials {
		ct, ok := byTrial[t.Dir]
		if !ok || len(byTrial) != len(trials) {
			fmt.Fprintf(out, "%s: verdict.json lists %d trials, the folder holds %d of their histories: not the run's verdict\n", c.dir, len(trials), len(byTrial))
			return &exitError{code: exitMismatch}
		}
		trials[i].Observed, trials[i].Reason, checks[i] = ct.o.Observed, ct.o.Reason, ct.r
	}
	v := judge.Run(c.s.Name, c.s.Rules(), c.v.Seed, trials, checks)
	if c.v.Gate != "" { // judged by a baseline this folder does not hold
		v.Expect, v.Matched, v.Gate = c.v.Expect, false, c.v.Gate
	}
	head := "MATCHED"
	if !v.Matched {
		head = "NOT MATCHED"
	}
	fmt.Fprintf(out, "run %s: expect %s, observed %s — %s (%s)\n", c.s.Name, v.Expect, v.Observed, head, v.Tally(v.Unit()))
	if v.Observed != c.v.Observed {
		fmt.Fprintf(out, "  the run recorded it %s\n", c.v.Observed)
	}
	if !v.Matched {
		fmt.Fprintf(out, "  %s\n", wrap(v.Failure(), 96, "    "))
		return &exitError{code: exitMismatch}
	}
	return nil
}

// grants returns what evidence.Evaluate asks of a history that is not
// held: without faults or requirements, it looks in the history only for
// a grant (an ok acquire at or after time 0), and the latest grant is at
// or after time 0 if any is. The counts it also makes are not printed.
func grants(sum checker.Summary) checker.History {
	if sum.Grant == nil {
		return nil
	}
	return checker.History{*sum.Grant}
}

// validHistory returns the error of reading the history at path, in flat
// memory, or nil.
func validHistory(path string) error {
	f, err := checker.OpenHistory(path) // gzipped or not
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checker.ScanJSONL(f, func(checker.Event) error { return nil }); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkOptions returns the checker options and the judging rules `lockpick
// run` used for the history at path: from the scenario.json of its run
// folder (the folder of the history, or its parent for a trial's); maxTTL
// overrides the options. Outside a run folder the rules are the empty ones.
func checkOptions(path string, maxTTL time.Duration) (*checker.Options, judge.Rules, error) {
	dir := filepath.Dir(path)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if _, err := os.Stat(filepath.Join(d, "scenario.json")); err != nil {
			continue
		}
		s, err := campaign.RunScenario(d)
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

// historyPaths returns path itself for a file, or every trial's history in
// a run folder, or its history.jsonl (a soak's history.jsonl.gz).
func historyPaths(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	paths, _ := filepath.Glob(filepath.Join(path, "trial-*", "history.jsonl"))
	for _, name := range []string{checker.HistoryFile, checker.HistoryFileGz} { // a soak's is compressed
		if _, err := os.Stat(filepath.Join(path, name)); err == nil && len(paths) == 0 {
			paths = []string{filepath.Join(path, name)}
		}
	}
	if len(paths) == 0 {
		return nil, errors.New(path + ": no history.jsonl in this folder")
	}
	return paths, nil
}
