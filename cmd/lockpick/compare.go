package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/scenarios"
)

func newCompareCmd() *cobra.Command {
	var f runFlags
	var arms []string
	cmd := &cobra.Command{
		Use:   "compare SCENARIO [--arms A,B,...] [--trials N]",
		Short: "Run a scenario's arms (e.g. mitigations) N trials each and compare violation rates",
		Long: `Compare runs each arm of a scenario (variants declared under "arms:" in its
YAML, e.g. restart delay 0, restart delay ≥ TTL, appendfsync always) for
--trials trials, and prints per arm the violation rate with its 95% Wilson
interval, and a Fisher exact test of the first arm against each other arm.
The run folder holds one folder per arm and compare.json.`,
		Example: "  lockpick compare redlock-crash-restart --trials 100 --parallel 4",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return compare(cmd.Context(), cmd.OutOrStdout(), args[0], arms, f)
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
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer cluster.KillAll()
	total := f.trials * max(len(arms), len(s.Arms))
	bar := newBar(s.Name, f, total)
	c, dir, err := scenarios.Compare(ctx, s, arms, &scenarios.Options{Trials: f.trials, Seed: f.seed, Out: f.out,
		Parallel: f.parallel, Backend: nb, Progress: func(done, _ int) { _ = bar.Set(done) }})
	_ = bar.Finish()
	switch {
	case ctx.Err() != nil:
		return &exitError{code: 130, err: errors.New("interrupted; every node was stopped and no run folder was kept")}
	case errors.Is(err, scenarios.ErrBadScenario), errors.Is(err, scenarios.ErrUnknownScenario):
		return usageError(err.Error())
	case err != nil:
		return infraError(err)
	}
	if err := c.WriteTable(out); err != nil {
		return err
	}
	fmt.Fprintf(out, "results: %s\n", dir)
	return nil
}

// loadScenario returns the scenario from the single file given, else the built-in one.
func loadScenario(name string, files []string) (scenarios.Scenario, error) {
	if len(files) > 1 {
		return scenarios.Scenario{}, errors.New("compare takes one --file")
	}
	if len(files) == 1 {
		return scenarios.LoadFile(files[0])
	}
	return scenarios.Lookup(name)
}
