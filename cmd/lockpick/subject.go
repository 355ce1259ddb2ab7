package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
)

// addSubjectFlags adds --subject, --subject-cmd and --subject-shape,
// which [applySubject] reads; what says what the lock is put through
// instead.
func addSubjectFlags(cmd *cobra.Command, subject, command, shape *string, what string) {
	cmd.Flags().StringVar(subject, "subject", "", "put this lock through "+what)
	cmd.Flags().StringVar(command, "subject-cmd", "", `the lock is this program, speaking the worker protocol (docs/worker-protocol.md)`)
	cmd.Flags().StringVar(shape, "subject-shape", "", `with --subject-cmd: the program's lock is "single" (one Redis master), "redlock" (independent masters) or "etcd"; scenarios of another shape are skipped, as for a built-in subject (default: run it everywhere)`)
}

// applySubject puts the lock named by --subject through every scenario of
// list in place of the scenario's own; external is --subject-cmd, the
// command line of a program speaking the worker protocol, which implies
// --subject external. A scenario the subject does not fit (a Redlock
// topology for a single-instance lock, a failover topology for Redlock, a
// lock setting the subject ignores) is skipped: it comes back as a verdict
// that says why (results.Verdict.Skipped); shape is --subject-shape, the
// shape a program declares (see [scenario.Scenario.WithSubjectShape]).
// Bad flags are usage errors.
func applySubject(list []scenario.Scenario, subject, external, shape string) ([]scenario.Scenario, []*results.Verdict, error) {
	if shape != "" && external == "" {
		return nil, nil, usageError("run: --subject-shape declares the shape of a --subject-cmd program")
	}
	if subject == "" && external == "" {
		return list, nil, nil
	}
	var command []string
	if external != "" {
		if subject == "" {
			subject = "external"
		}
		if subject != "external" {
			return nil, nil, usageError("run: --subject-cmd runs an external subject; it does not go with --subject " + subject)
		}
		command = strings.Fields(external)
		if len(command) == 0 {
			return nil, nil, usageError("run: --subject-cmd is empty")
		}
		// An absolute path, so isolated clients find it too; and a
		// missing program is a usage error now, not a failed trial.
		path, err := exec.LookPath(command[0])
		if err == nil {
			path, err = filepath.Abs(path)
		}
		if err != nil {
			return nil, nil, usageError("run: --subject-cmd: " + err.Error())
		}
		command[0] = path
	}
	out := make([]scenario.Scenario, 0, len(list))
	var skipped []*results.Verdict
	for _, s := range list {
		v, err := s.WithSubjectShape(subject, command, shape)
		var misfit *scenario.MisfitError
		switch {
		case errors.As(err, &misfit):
			skipped = append(skipped, &results.Verdict{Scenario: s.Name + "@" + subjectName(subject, command), Skipped: misfit.Reason})
		case err != nil:
			return nil, nil, usageError("run: " + subjectFlag(external) + ": " + err.Error())
		default:
			out = append(out, v)
		}
	}
	return out, skipped, nil
}

// subjectName names the subject as run folders do: the kind, or an
// external program's file name.
func subjectName(kind string, command []string) string {
	if kind == "external" && len(command) > 0 {
		return filepath.Base(command[0])
	}
	return kind
}

// subjectOf returns the subject's name from --subject and --subject-cmd,
// "" without a subject.
func subjectOf(subject, external string) string {
	if f := strings.Fields(external); len(f) > 0 {
		return filepath.Base(f[0])
	}
	return subject
}

// subjectFlag names the flag the user gave the subject with, for messages.
func subjectFlag(external string) string {
	if external != "" {
		return "--subject-cmd"
	}
	return "--subject"
}

// printSkipped prints one line per skipped scenario.
func printSkipped(w io.Writer, skipped []*results.Verdict) {
	for _, v := range skipped {
		fmt.Fprintf(w, "%s: skipped: %s\n", v.Scenario, wrap(v.Skipped, 96, "    "))
	}
}

// gateSubject judges a run of the user's own lock (docs/verdicts.md, "A
// lock of your own"): never by the scenarios' expectations, which are
// about lockpick's locks. A verdict fails when it is inconclusive, or,
// with a baseline, when it is worse than the baseline's: the run judged
// each verdict so ([scenario.Conclusive], [judge.Baseline.Judge]) before
// writing its folder, so verdict.json, the report, the JUnit file and the
// summary say the same. It prints each change from the baseline and
// returns how many verdicts failed.
func gateSubject(w io.Writer, vs []*results.Verdict, base *judge.Baseline, from string) int {
	if base != nil {
		changes := base.Compare(vs)
		if len(changes) == 0 {
			fmt.Fprintf(w, "baseline %s: no change\n", from)
		}
		for _, c := range changes {
			mark := ""
			if c.Worse {
				mark = " — WORSE"
			}
			fmt.Fprintf(w, "baseline %s: %s: %s%s\n", from, c.Scenario, c.What, mark)
		}
	}
	failed := 0
	for _, v := range vs {
		if v.Skipped != "" {
			continue
		}
		if !v.Matched {
			failed++
		}
	}
	return failed
}
