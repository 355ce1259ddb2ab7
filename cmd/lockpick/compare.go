package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

func newCompareCmd() *cobra.Command {
	var f runFlags
	var arms []string
	cmd := &cobra.Command{
		Use:   "compare [SCENARIO] [--file F] [--arms A,B,...] [--trials N]",
		Short: "Run a scenario's arms (e.g. mitigations) N trials each and compare violation rates",
		Long: `Compare runs each arm of a scenario (variants declared under "arms:" in its
YAML, e.g. restart delay 0, restart delay ≥ TTL, appendfsync always) for
--trials trials, and prints per arm the violation rate with its 95% Wilson
interval, and a Fisher exact test of the first arm against each other arm.
Rates count conclusive trials only; a trial that proves nothing (a fault
that did not fire, a lock that was never granted, a dead worker) is counted
apart as inconclusive. Each arm is also judged against its own expect: (an
arm without one takes the scenario's) as a run is; compare exits 1 when an
arm did not match, which an arm with an inconclusive trial never does.
With --shard, the counts and verdicts are the shard's own (partial) and no
Fisher test is made: lockpick merge makes the comparison.
The run folder holds one folder per arm and compare.json.`,
		Example: "  lockpick compare redlock-crash-restart --trials 100 --parallel 4\n  lockpick compare --file my-scenario.yaml --trials 20",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return compare(cmd.Context(), cmd.OutOrStdout(), name, arms, f)
		},
	}
	cmd.Flags().StringSliceVar(&arms, "arms", nil, "arms to run, in order (default: all the scenario declares)")
	addTrialFlags(cmd, &f)
	cmd.Flags().StringArrayVarP(&f.files, "file", "f", nil, "take the scenario from this YAML file instead")
	return cmd
}

func compare(ctx context.Context, out io.Writer, name string, arms []string, f runFlags) error {
	if f.trials < 1 {
		return usageError("compare: --trials must be at least 1")
	}
	nb, err := backendFactory(f.backend, f.image)
	if err != nil {
		return usageError("compare: " + err.Error())
	}
	s, err := loadScenario(name, f.files)
	if err != nil {
		return usageError(err.Error())
	}
	if err := backendFits(f.backend, s); err != nil {
		return usageError("compare: " + err.Error())
	}
	shard, err := f.shard.resolve()
	if err != nil {
		return usageError("compare: " + err.Error())
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer cluster.KillAll()
	total := len(shard.Trials(f.trials)) * max(len(arms), len(s.Arms))
	bar := newBar(s.Name, f, total)
	c, dir, err := campaign.Compare(ctx, s, arms, &trial.Options{Trials: f.trials, Seed: f.seed, Out: f.out,
		Parallel: f.parallel, Backend: nb, Shard: shard, Progress: func(done, _ int) { _ = bar.Set(done) }})
	_ = bar.Finish()
	switch {
	case ctx.Err() != nil:
		return &exitError{code: 130, err: errors.New("interrupted; every node was stopped and no run folder was kept")}
	case errors.Is(err, scenario.ErrBadScenario), errors.Is(err, scenario.ErrUnknownScenario):
		return usageError(err.Error())
	case err != nil:
		return infraError(err)
	}
	if err := c.WriteTable(out); err != nil {
		return err
	}
	fmt.Fprintf(out, "results: %s\n", dir)
	return compareFailure(c)
}

// compareFailure is the exit of a comparison: a mismatch when an arm did
// not match its own expectation (an arm with an inconclusive trial never
// does), as its verdict.json, its report, the JUnit file and the summary
// say.
func compareFailure(c *results.Comparison) error {
	bad := c.Unmatched()
	if len(bad) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d of %d arms did not match their expectation: %s", len(bad), len(c.Arms), strings.Join(bad, "; "))
	if n := c.Inconclusive(); n > 0 {
		msg += fmt.Sprintf("; %d trials were inconclusive and left out of the rates (reasons in each arm's verdict.json and report)", n)
	}
	return mismatch("%s", msg)
}

// loadScenario returns the scenario from the single file given, else the
// built-in one. With a file, a name is optional and must be the file's.
func loadScenario(name string, files []string) (scenario.Scenario, error) {
	switch {
	case len(files) > 1:
		return scenario.Scenario{}, errors.New("compare: takes one --file")
	case len(files) == 0 && name == "":
		return scenario.Scenario{}, errors.New("compare: name a scenario (see `lockpick list`) or pass --file")
	case len(files) == 0:
		return scenario.Lookup(name)
	}
	s, err := scenario.LoadFile(files[0])
	if err == nil && name != "" && name != s.Name {
		err = fmt.Errorf("compare: %s holds scenario %q, not %q", files[0], s.Name, name)
	}
	return s, err
}
