package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/scenarios"
)

func newBenchCmd() *cobra.Command {
	var ops int
	cmd := &cobra.Command{
		Use:   "bench [--ops N]",
		Short: "Lock throughput, side by side with redsync and bsm/redislock on the same local nodes",
		Long: `Bench starts five local Redis masters and measures acquire+release cycles per
second with one client: lockpick's single-node lock against bsm/redislock on
one node, and lockpick's Redlock against redsync on all five. The subjects run
one after the other on the same nodes; the ratio column is lockpick's rate over
the other library's. For a statistically careful comparison use
go test ./lockcore -run '^$' -bench AcquireRelease -count 5.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ops < 1 {
				return usageError("bench: --ops must be at least 1")
			}
			dir, err := os.MkdirTemp("", "lockpick-bench-")
			if err != nil {
				return infraError(err)
			}
			defer os.RemoveAll(dir)
			rs, err := scenarios.Bench(cmd.Context(), dir, ops)
			if err != nil {
				return infraError(err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SUBJECT\tNODES\tOPS/S\tRATIO")
			for _, r := range rs {
				ratio := ""
				if r.Versus != "" {
					ratio = fmt.Sprintf("%.2f× %s", r.Ratio, r.Versus)
				}
				fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\n", r.Subject, r.Nodes, r.OpsPerS, ratio)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&ops, "ops", 3000, "acquire+release cycles per subject")
	return cmd
}
