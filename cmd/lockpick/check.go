package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/results"
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
			found := 0
			for _, p := range paths {
				opt, err := checkOptions(p, maxTTL)
				if err != nil {
					if err := validHistory(p); err != nil {
						return usageError(err.Error()) // the history's own error comes first
					}
					return usageError(err.Error())
				}
				// Streamed in flat memory; read whole only if the stream
				// cannot give Check's exact result (docs/history.md).
				r, sum, err := checker.CheckFile(p, opt, timeout)
				if err != nil {
					return usageError(err.Error()) // it names the file
				}
				// The evidence a history carries alone: a lock was granted,
				// and every completion has its invoke.
				ev := evidence.Evaluate(evidence.Input{History: grants(sum), Result: r})
				if err := withRecorded(&ev, p, r, maxTTL == 0); err != nil {
					return usageError(err.Error())
				}
				// The observation in run's words, then the checker's own verdict.
				observed, _ := evidence.Observe(r, ev, nil)
				fmt.Fprintf(out, "%s: %d events, observed %s (checker verdict %s; %s)\n", p, sum.Events, observed, r.Verdict, sum.Path())
				for _, a := range r.Anomalies {
					fmt.Fprintf(out, "  %s: %s\n", a.Kind, wrap(a.Message, 96, "    "))
				}
				for _, why := range ev.Reasons {
					fmt.Fprintf(out, "  inconclusive: %s\n", wrap(why, 96, "    "))
				}
				if r.Verdict != checker.Ok || !ev.Conclusive {
					found++
				}
			}
			if found > 0 {
				return &exitError{code: exitMismatch}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "give up the linearizability searches of a history checked whole after this long (verdict unknown)")
	cmd.Flags().DurationVar(&maxTTL, "max-ttl", 0, "longest lease an acquire with an unknown outcome may hold (default: the run's TTL, or the longest lease seen)")
	return cmd
}

// withRecorded adds to ev, the evidence of the history at path checked
// as r, what its run recorded of it and the history does not hold (a
// fault that never fired, a requirement not met, a lock program that
// stopped answering): a trial its run found inconclusive is inconclusive
// here too. A history whose anomalies are not those its run recorded (cut
// short, or changed) is not the one the run judged, and proves nothing;
// counted says r was checked with the run's own options (no --max-ttl).
func withRecorded(ev *evidence.Evidence, path string, r checker.Result, counted bool) error {
	rec, ok, err := campaign.RecordedTrial(path)
	if err != nil || !ok {
		return err
	}
	if !rec.Evidence.Conclusive {
		ev.Conclusive = false
		for _, why := range rec.Evidence.Reasons {
			ev.Reasons = append(ev.Reasons, "recorded by the run: "+why)
		}
		if len(rec.Evidence.Reasons) == 0 {
			ev.Reasons = append(ev.Reasons, "recorded by the run as inconclusive")
		}
	}
	got := campaign.AnomalyCounts(r)
	if counted && rec.Anomalies != nil && !maps.Equal(got, rec.Anomalies) {
		ev.Conclusive = false
		ev.Reasons = append(ev.Reasons, fmt.Sprintf("the run recorded %s in this trial, this history shows %s: it is not the history the run judged (cut short or changed), or this lockpick checks it otherwise",
			results.CountsText(rec.Anomalies), results.CountsText(got)))
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

// checkOptions returns the checker options `lockpick run` used for the
// history at path: from the scenario.json of its run folder (the folder of
// the history, or its parent for a trial's), unless maxTTL overrides them.
func checkOptions(path string, maxTTL time.Duration) (*checker.Options, error) {
	if maxTTL > 0 {
		return &checker.Options{MaxTTL: maxTTL}, nil
	}
	dir := filepath.Dir(path)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if _, err := os.Stat(filepath.Join(d, "scenario.json")); err != nil {
			continue
		}
		s, err := campaign.RunScenario(d)
		if err != nil {
			return nil, err
		}
		return trial.CheckOptions(s), nil
	}
	return nil, nil
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
