package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/judge"
)

func newCheckCmd() *cobra.Command {
	var timeout, maxTTL time.Duration
	cmd := &cobra.Command{
		Use:   "check PATH",
		Short: "Check a history.jsonl (or every trial of a run folder) and print its anomalies",
		Long: `Check reads a history in lockpick's JSON-lines format (docs/history.md;
gzipped or not; histories recorded by other tools work too), runs every
checker and prints the anomalies. A history outside a run folder proves
only that a lock was granted; --max-ttl sets how long an acquire with an
unknown outcome may hold the lock (default: the longest lease in the
history).
Inside a run folder each history is judged as its run judged it: with the
scenario's options and rules (scenario.json) and the trial's recorded
evidence (verdict.json: what the faults did, the requirements); a history
whose anomalies are not those its run recorded (cut short, or changed) is
inconclusive. Given the run folder itself, check then gives the run's
verdict again from its trials, as run printed it.
A history in time order is checked as a stream, in flat memory, with no
search to time out; one that is not (or one with a lost update to explain)
is read whole and checked with linearizability searches bounded by
--timeout.
Exit, for a run folder: 0 when the verdict matches its expectation, 1 when
it does not (as run's). For a history: 0 no anomaly; 1 anomalies, a search
that timed out (verdict unknown), or a history that proves nothing (no lock
was ever granted, completions without their invoke, or a trial its run
recorded inconclusive). 2: a malformed file (with its line number).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := historyPaths(args[0])
			if err != nil {
				return usageError(err.Error())
			}
			run, err := recordedRun(args[0])
			if err != nil {
				return usageError(err.Error())
			}
			out := cmd.OutOrStdout()
			failed := 0
			byTrial := map[string]campaign.Checked{} // by trial folder
			for _, p := range paths {
				c, err := campaign.CheckHistory(p, timeout, maxTTL)
				if err != nil {
					if verr := validHistory(p); verr != nil {
						err = verr // the history's own error comes first
					}
					return usageError(err.Error())
				}
				printChecked(out, p, c)
				byTrial[filepath.Base(filepath.Dir(p))] = c
				if c.Result.Verdict != checker.Ok || c.Observed == judge.Inconclusive {
					failed++
				}
			}
			if run != nil {
				return printRun(out, run, byTrial)
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

// printChecked prints the observation of the history at path in run's
// words, the checker's own verdict, the anomalies and why it proves
// nothing, if it does not.
func printChecked(out io.Writer, path string, c campaign.Checked) {
	fmt.Fprintf(out, "%s: %d events, observed %s (checker verdict %s; %s)\n", path, c.Summary.Events, c.Observed, c.Result.Verdict, c.Summary.Path())
	for _, a := range c.Result.Anomalies {
		fmt.Fprintf(out, "  %s: %s\n", a.Kind, wrap(a.Message, 96, "    "))
	}
	if c.Reason != "" {
		fmt.Fprintf(out, "  inconclusive: %s\n", wrap(c.Reason, 96, "    "))
	}
}

// recordedRun returns the run folder at path, or nil when path is a
// history file, a soak's folder (judged round by round, as one history
// here) or not a run folder.
func recordedRun(path string) (*campaign.Run, error) {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return nil, nil
	}
	run, err := campaign.ReadRun(path)
	if err != nil || run == nil || run.Verdict.Soak != nil {
		return nil, err
	}
	return run, nil
}

// printRun prints run's verdict given again from its trials checked again
// and returns its exit, as run's: 0 when it matches.
func printRun(out io.Writer, run *campaign.Run, byTrial map[string]campaign.Checked) error {
	v, err := campaign.CheckRun(run, byTrial)
	if err != nil {
		fmt.Fprintf(out, "run %s: %v\n", run.Scenario.Name, err)
		return &exitError{code: exitMismatch}
	}
	head := "MATCHED"
	if !v.Matched {
		head = "NOT MATCHED"
	}
	fmt.Fprintf(out, "run %s: expect %s, observed %s — %s (%s)\n", run.Scenario.Name, v.Expect, v.Observed, head, v.Tally(v.Unit()))
	if v.Observed != run.Verdict.Observed {
		fmt.Fprintf(out, "  the run recorded it %s\n", run.Verdict.Observed)
	}
	if !v.Matched {
		fmt.Fprintf(out, "  %s\n", wrap(v.Failure(), 96, "    "))
		return &exitError{code: exitMismatch}
	}
	return nil
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
