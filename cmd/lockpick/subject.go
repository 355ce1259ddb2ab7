package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
)

// addSubjectFlags adds --subject, --subject-cmd, --subject-shape and
// --subject-caps, which [applySubject] reads; what says what the lock is
// put through instead.
func addSubjectFlags(cmd *cobra.Command, subject, command, shape, caps *string, what string) {
	cmd.Flags().StringVar(subject, "subject", "", "put this lock through "+what)
	cmd.Flags().StringVar(command, "subject-cmd", "", `the lock is this program, speaking the worker protocol (docs/worker-protocol.md)`)
	cmd.Flags().StringVar(shape, "subject-shape", "", `with --subject-cmd: the program's lock is "single" (one Redis master), "redlock" (independent masters) or "etcd"; scenarios of another shape are skipped, as for a built-in subject (default: run it everywhere)`)
	cmd.Flags().StringVar(caps, "subject-caps", "", `with --subject-cmd: what the program's lock does, of "block" (it waits for the lock itself), "renew" (it renews its lease until released) and "fence" (it hands out fencing tokens), comma-separated, or "none"; the scenarios it cannot meet are skipped with the reason (default: declare nothing: fenced scenarios run, no block, no renew)`)
}

// A subjectSpec is the lock the subject flags put through the scenarios,
// as given: --subject, --subject-cmd, --subject-shape and --subject-caps.
type subjectSpec struct{ kind, cmd, shape, caps string }

// resolve checks the flags and returns the subject's kind and, for a lock
// program, the program, its path made absolute; kind is "" without a
// subject. Bad flags are usage errors, prefixed with the command's name.
func (f subjectSpec) resolve(name string) (string, scenario.Program, error) {
	bad := func(msg string) (string, scenario.Program, error) {
		return "", scenario.Program{}, usageError(name + ": " + msg)
	}
	switch {
	case f.shape != "" && f.cmd == "":
		return bad("--subject-shape declares the shape of a --subject-cmd program")
	case f.caps != "" && f.cmd == "":
		return bad("--subject-caps declares what a --subject-cmd program does")
	case f.kind == "" && f.cmd == "":
		return "", scenario.Program{}, nil
	case f.cmd == "":
		return f.kind, scenario.Program{}, nil
	case f.kind != "" && f.kind != "external":
		return bad("--subject-cmd runs an external subject; it does not go with --subject " + f.kind)
	}
	p := scenario.Program{Command: strings.Fields(f.cmd), Shape: f.shape}
	if len(p.Command) == 0 {
		return bad("--subject-cmd is empty")
	}
	// An absolute path, so isolated clients find it too; and a missing
	// program is a usage error now, not a failed trial.
	path, err := scenario.ProgramPath(p.Command[0])
	if err != nil {
		return bad("--subject-cmd: " + err.Error())
	}
	p.Command[0] = path
	if f.caps != "" {
		if p.Caps, err = scenario.ParseCaps(f.caps); err != nil {
			return bad("--subject-caps: " + strings.TrimPrefix(err.Error(), scenario.ErrBadScenario.Error()+": "))
		}
	}
	return "external", p, nil
}

// with puts the subject kind (p, for a lock program) through s; a
// *scenario.MisfitError says why it cannot be.
func with(s scenario.Scenario, kind string, p scenario.Program) (scenario.Scenario, error) {
	if kind == "external" {
		return s.WithProgram(p)
	}
	return s.WithSubject(kind, nil)
}

// applySubject puts the lock named by --subject through every scenario of
// list in place of the scenario's own; external is --subject-cmd, the
// command line of a program speaking the worker protocol, which implies
// --subject external, and shape its --subject-shape. See
// [applySubjectSpec].
func applySubject(list []scenario.Scenario, subject, external, shape string) ([]scenario.Scenario, []*results.Verdict, error) {
	return applySubjectSpec(list, subjectSpec{kind: subject, cmd: external, shape: shape})
}

// applySubjectSpec puts the subject of f through every scenario of list. A
// scenario the subject does not fit (a Redlock topology for a
// single-instance lock, a failover topology for Redlock, an attack it
// cannot meet) is skipped: it comes back as a verdict that says why
// (results.Verdict.Skipped). The others come back retargeted, without the
// settings of lockpick's lock the subject does not honour (their Dropped;
// see [scenario.Scenario.WithProgram]). Bad flags are usage errors.
func applySubjectSpec(list []scenario.Scenario, f subjectSpec) ([]scenario.Scenario, []*results.Verdict, error) {
	kind, p, err := f.resolve("run")
	if err != nil || kind == "" {
		return list, nil, err
	}
	out := make([]scenario.Scenario, 0, len(list))
	var skipped []*results.Verdict
	for _, s := range list {
		v, err := with(s, kind, p)
		var misfit *scenario.MisfitError
		switch {
		case errors.As(err, &misfit):
			skipped = append(skipped, &results.Verdict{Scenario: s.Name + "@" + subjectName(kind, p.Command), Skipped: misfit.Reason})
		case err != nil:
			return nil, nil, usageError("run: " + subjectFlag(f.cmd) + ": " + err.Error())
		default:
			out = append(out, v)
		}
	}
	return out, skipped, nil
}

// printDropped prints one line per scenario that runs without settings of
// its own lock, for the subject put through it.
func printDropped(w io.Writer, list []scenario.Scenario) {
	for _, s := range list {
		if len(s.Dropped) > 0 {
			fmt.Fprintf(w, "%s: runs without %s\n", s.Name, wrap(strings.Join(s.Dropped, ", "), 96, "    "))
		}
	}
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
// skipWithoutFUSE moves the scenarios that cut a node's power to skipped,
// with the reason, when this host cannot mount the lazy disks they need
// (noFUSE, from [lazyfs.Available], is not nil).
func skipWithoutFUSE(list []scenario.Scenario, skipped []*results.Verdict, noFUSE error) ([]scenario.Scenario, []*results.Verdict) {
	if noFUSE == nil {
		return list, skipped
	}
	var keep []scenario.Scenario
	for _, s := range list {
		if strings.Contains(s.FaultText(), "power-loss") {
			skipped = append(skipped, &results.Verdict{Scenario: s.Name, Skipped: "a power loss needs lazy disks: " + noFUSE.Error()})
			continue
		}
		keep = append(keep, s)
	}
	return keep, skipped
}

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
