package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/checker"
)

func newCheckCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "check PATH",
		Short: "Check a history.jsonl (or every trial of a run folder) and print its anomalies",
		Long: `Check reads a history in lockpick's JSON-lines format (see DESIGN.md; histories
recorded by other tools work too), runs every checker and prints the anomalies.
Exit 0: no anomaly; 1: anomalies; 2: a malformed file (with its line number).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := historyPaths(args[0])
			if err != nil {
				return usageError(err.Error())
			}
			out := cmd.OutOrStdout()
			found := 0
			for _, p := range paths {
				h, err := checker.ReadFile(p)
				if err != nil {
					return usageError(fmt.Sprintf("%s: %v", p, err))
				}
				r := checker.CheckTimeout(h, nil, timeout)
				fmt.Fprintf(out, "%s: %d events, verdict %s\n", p, len(h), r.Verdict)
				for _, a := range r.Anomalies {
					fmt.Fprintf(out, "  %s: %s\n", a.Kind, wrap(a.Message, 96, "    "))
				}
				if r.Verdict != checker.Ok {
					found++
				}
			}
			if found > 0 {
				return &exitError{code: exitMismatch}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "give up a linearizability search after this long (verdict unknown)")
	return cmd
}

// historyPaths returns path itself for a file, or every trial's history in a run folder.
func historyPaths(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	paths, _ := filepath.Glob(filepath.Join(path, "trial-*", "history.jsonl"))
	if len(paths) == 0 {
		if _, err := os.Stat(filepath.Join(path, "history.jsonl")); err == nil {
			paths = []string{filepath.Join(path, "history.jsonl")}
		}
	}
	if len(paths) == 0 {
		return nil, errors.New(path + ": no history.jsonl in this folder")
	}
	return paths, nil
}
