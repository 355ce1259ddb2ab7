package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/scenario"
)

func newListCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios with their expected verdicts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if verbose {
				for _, s := range scenario.All() {
					fmt.Fprintf(out, "%s  [expect %s]\n  %s\n", s.Name, s.Expect, wrap(s.Explain, 76, "  "))
					if sched := s.Schedule(); sched != "" {
						fmt.Fprintf(out, "  faults: %s\n", wrap(sched, 76, "    "))
					}
					if len(s.Arms) > 0 {
						fmt.Fprintf(out, "  arms (lockpick compare): %s\n", strings.Join(s.ArmNames(), ", "))
					}
					fmt.Fprintln(out)
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCENARIO\tEXPECT\tWHAT")
			for _, s := range scenario.All() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Expect, s.Summary)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "explain each scenario in a paragraph")
	return cmd
}
