package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/results"
)

type mergeFlags struct {
	out     string
	junit   string
	summary string
}

func newMergeCmd() *cobra.Command {
	var f mergeFlags
	cmd := &cobra.Command{
		Use:   "merge SHARD-FOLDER...",
		Short: "Merge the folders of a sharded run or compare into the verdict one machine would have written",
		Long: `Merge takes the run (or compare) folders written by --shard i/n on several
machines, checks that they are exactly the shards of one run (same scenario
file, lockpick build, seed, trial and shard counts; every shard once),
checks every trial's history again with this binary's checker (a shard whose
verdict.json differs from its histories is refused, naming the trial), and
writes one merged folder per scenario under --out: every trial's folder,
verdict.json (or compare.json), history.jsonl and report.html, with the
same per-trial seeds and counts as an unsharded run with the same seed.
Shard folders of several scenarios can be given at once, and a folder that
holds shard folders (results/runs on a shared volume) stands for all of them.

An inconclusive trial stays inconclusive. Wall times add up the shards'
machine time.

--junit and --summary cover runs and every arm of a comparison (the summary
also holds the comparison tables).

Exit codes: 0 every merged verdict matched (compare: every arm's, each
against its own expectation), 1 a verdict did not match, 2 shards that do not fit together (a missing or
repeated shard is named), a shard whose record differs from its histories,
or bad usage, 3 a folder could not be written.`,
		Example: "  lockpick merge results/runs\n  lockpick merge a/ b/ c/ d/ --junit junit.xml --summary summary.md",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return merge(cmd.OutOrStdout(), args, f)
		},
	}
	cmd.Flags().StringVar(&f.out, "out", "results/runs", "folder to create the merged folders in")
	cmd.Flags().StringVar(&f.junit, "junit", "", "also write a JUnit XML report of the merged runs to this file")
	cmd.Flags().StringVar(&f.summary, "summary", "", "also write a Markdown table of the merged verdicts to this file")
	return cmd
}

func merge(out io.Writer, args []string, f mergeFlags) error {
	var dirs []string
	for _, a := range args {
		ds, err := campaign.ShardFolders(a)
		if err != nil {
			return usageError("merge: " + err.Error())
		}
		dirs = append(dirs, ds...)
	}
	merged, err := campaign.Merge(dirs, f.out)
	switch {
	case errors.Is(err, campaign.ErrShardsDontFit), errors.Is(err, campaign.ErrRecordDiffers):
		return usageError("merge: " + err.Error())
	case err != nil:
		for _, m := range merged {
			fmt.Fprintf(out, "merged before the failure: %s\n", m.Dir)
		}
		return infraError(fmt.Errorf("merge: %w", err))
	}
	var verdicts []*results.Verdict
	var runDirs []string
	var tables bytes.Buffer
	failed := 0
	for _, m := range merged {
		if m.Comparison != nil {
			if err := m.Comparison.WriteTable(io.MultiWriter(out, &tables)); err != nil {
				return infraError(err)
			}
			fmt.Fprintf(out, "results: %s\n", m.Dir)
			if err := compareFailure(m.Comparison); err != nil {
				fmt.Fprintln(out, err)
				failed++
			}
			for i, v := range m.Arms { // each arm's verdict goes into the JUnit file and the summary
				verdicts, runDirs = append(verdicts, v), append(runDirs, filepath.Join(m.Dir, m.Comparison.Arms[i].Dir))
			}
			continue
		}
		printVerdict(out, m.Verdict, m.Dir, false)
		verdicts, runDirs = append(verdicts, m.Verdict), append(runDirs, m.Dir)
		if !m.Verdict.Matched {
			failed++
		}
	}
	extra := ""
	if tables.Len() > 0 {
		extra = "\n```\n" + tables.String() + "```\n"
	}
	if err := writeReports(f.junit, f.summary, verdicts, runDirs, extra); err != nil {
		return err
	}
	if failed > 0 {
		return mismatch("%d of %d merged runs or comparisons did not match their expectation (a comparison: one of its arms)", failed, len(merged))
	}
	return nil
}
