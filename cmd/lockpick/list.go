package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/scenario"
)

func newListCmd() *cobra.Command {
	var verbose bool
	var suite string
	var subj subjectSpec
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios with their expected verdicts",
		Long: `List the built-in scenarios with their expected verdicts, or with --suite
the members of one suite (default: every scenario; also SUITES).

With a subject (--subject, or --subject-cmd with its --subject-shape and
--subject-caps), it says which attacks that lock will meet, before
anything runs: each scenario is met (and which settings of lockpick's own
lock it runs without), skipped (and why), or of another shape than the
lock's, which is left out of the count.`,
		Example: "  lockpick list\n  lockpick list --suite ci\n  lockpick list -v\n" +
			"  lockpick list --subject-cmd examples/pylock/pylock.py --subject-shape single --subject-caps none",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			list, err := scenario.Suite(suite)
			if err != nil {
				return usageError(err.Error())
			}
			if subj != (subjectSpec{}) {
				return listSubject(out, list, subj)
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
	// The suites' names come from the catalogue, parsed only when help is
	// shown: not on every command's start-up.
	help := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		c.Long = strings.Replace(c.Long, "SUITES", strings.Join(scenario.SuiteNames()[1:], ", "), 1)
		help(c, args)
	})
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "explain each scenario in a paragraph, with its suites and arms")
	cmd.Flags().StringVar(&suite, "suite", "default", "list only this suite's scenarios")
	addSubjectFlags(cmd, &subj.kind, &subj.cmd, &subj.shape, &subj.caps, "the scenarios, and say which it meets: redislock, redsync, set-nx, redlock, ...")
	return cmd
}

// listSubject prints which scenarios of list the subject of f meets: met
// (with the settings of lockpick's lock it runs without), skipped (with
// the reason), or of another shape than the subject's lock, which the
// count line leaves out.
func listSubject(w io.Writer, list []scenario.Scenario, f subjectSpec) error {
	kind, p, err := f.resolve("list")
	if err != nil {
		return err
	}
	name := subjectName(kind, p.Command)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMEETS\tWHY")
	met, ofShape := 0, 0
	for _, s := range list {
		v, err := with(s, kind, p)
		var misfit *scenario.MisfitError
		switch {
		case errors.As(err, &misfit) && misfit.OtherShape:
			fmt.Fprintf(tw, "%s\tother shape\t%s\n", s.Name, misfit.Reason)
		case errors.As(err, &misfit):
			ofShape++
			fmt.Fprintf(tw, "%s\tskipped\t%s\n", s.Name, misfit.Reason)
		case err != nil:
			return usageError("list: " + subjectFlag(f.cmd) + ": " + err.Error())
		default:
			ofShape++
			met++
			why := ""
			if len(v.Dropped) > 0 {
				why = "runs without " + strings.Join(v.Dropped, ", ")
			}
			fmt.Fprintf(tw, "%s\tmet\t%s\n", s.Name, why)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch other := len(list) - ofShape; {
	case other > 0:
		fmt.Fprintf(w, "%s meets %d of %d scenarios of its shape; the %d of another shape are left out of the count\n", name, met, ofShape, other)
	case kind == "external" && p.Shape == "":
		fmt.Fprintf(w, "%s meets %d of %d scenarios (it declares no shape, so every topology counts: see --subject-shape)\n", name, met, ofShape)
	default:
		fmt.Fprintf(w, "%s meets %d of %d scenarios\n", name, met, ofShape)
	}
	return nil
}
