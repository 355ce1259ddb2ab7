package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/campaign"
)

func newBenchCmd() *cobra.Command {
	var ops, rounds int
	cmd := &cobra.Command{
		Use:   "bench [--ops N] [--rounds R]",
		Short: "Lock throughput, side by side with redsync and bsm/redislock on the same local nodes",
		Long: `Bench starts five local Redis masters and measures acquire+release cycles per
second with one client: lockpick's single-node lock against bsm/redislock on
one node, and lockpick's Redlock against redsync on all five, on the same
nodes. Each pair is interleaved: the cycles are split into --rounds rounds,
and in each round both subjects run, in alternating order, so that a machine
whose speed drifts slows both alike. OPS/S is a subject's median rate over
the rounds; RATIO is the median of the rounds' ratios (lockpick's rate over
the other library's), with their range.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ops < 1 || rounds < 1 {
				return usageError("bench: --ops and --rounds must be at least 1")
			}
			dir, err := os.MkdirTemp("", "lockpick-bench-")
			if err != nil {
				return infraError(err)
			}
			defer os.RemoveAll(dir)
			rs, err := campaign.Bench(cmd.Context(), dir, ops, rounds)
			if err != nil {
				return infraError(err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SUBJECT\tNODES\tOPS/S\tRATIO")
			for _, r := range rs {
				ratio := ""
				if r.Versus != "" {
					ratio = fmt.Sprintf("%.2f× %s (%.2f–%.2f)", r.Ratio, r.Versus, r.RatioMin, r.RatioMax)
				}
				fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\n", r.Subject, r.Nodes, r.OpsPerS, ratio)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&ops, "ops", 3000, "acquire+release cycles per subject")
	cmd.Flags().IntVar(&rounds, "rounds", 10, "interleaved rounds the cycles are split into")
	return cmd
}
