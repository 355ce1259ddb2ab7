package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/campaign"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN_FOLDER",
		Short: "Render report.html and summary.md of a run folder again (a matrix's: matrix.md)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := campaign.Rerender(args[0]); err != nil {
				return usageError(err.Error())
			}
			page := "report.html"
			if campaign.IsMatrix(args[0]) {
				page = "matrix.md"
			}
			fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(args[0], page))
			return nil
		},
	}
}
