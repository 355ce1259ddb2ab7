package main

import (
	"cmp"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/scenario"
)

func newListCmd() *cobra.Command {
	var verbose bool
	var suite string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios with their expected verdicts",
		Long: `List the built-in scenarios with their expected verdicts, or with --suite
the members of one suite (default: every scenario; also ` + strings.Join(scenario.SuiteNames()[1:], ", ") + `).`,
		Example: "  lockpick list\n  lockpick list --suite ci\n  lockpick list -v",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			list, err := scenario.Suite(suite)
			if err != nil {
				return usageError(err.Error())
			}
			if verbose {
				for _, s := range list {
					fmt.Fprintf(out, "%s  [expect %s]\n  %s\n", s.Name, s.Expect, wrap(s.Explain, 76, "  "))
					if len(s.Suites) > 0 {
						fmt.Fprintf(out, "  suites: default, %s\n", strings.Join(s.Suites, ", "))
					}
					if sched := s.Schedule(); sched != "" {
						fmt.Fprintf(out, "  faults: %s\n", wrap(sched, 76, "    "))
					}
					if len(s.Arms) > 0 {
						fmt.Fprintln(out, "  arms (lockpick compare):")
						for _, a := range s.Arms {
							fmt.Fprintf(out, "    %s  [expect %s]  %s\n", a.Name, cmp.Or(a.Expect, s.Expect), a.Summary)
						}
					}
					fmt.Fprintln(out)
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCENARIO\tEXPECT\tWHAT")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Expect, s.Summary)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "explain each scenario in a paragraph, with its suites and arms")
	cmd.Flags().StringVar(&suite, "suite", "default", "list only this suite's scenarios")
	return cmd
}
