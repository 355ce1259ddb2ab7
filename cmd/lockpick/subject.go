package main

import (
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/scenarios"
)

// addSubjectFlags adds --subject and --subject-cmd, which [applySubject]
// reads; what says what the lock is put through instead.
func addSubjectFlags(cmd *cobra.Command, subject, command *string, what string) {
	cmd.Flags().StringVar(subject, "subject", "", "put this lock through "+what)
	cmd.Flags().StringVar(command, "subject-cmd", "", `the lock is this program, speaking the worker protocol (README "Bring your own lock")`)
}

// applySubject puts the lock named by --subject through every scenario of
// list in place of the scenario's own; external is --subject-cmd, the
// command line of a program speaking the worker protocol, which implies
// --subject external. A scenario the subject does not fit (a Redlock
// topology for a single-instance lock, a failover topology for Redlock, a
// lock setting the subject ignores) is a usage error that says why.
func applySubject(list []scenarios.Scenario, subject string, external string) ([]scenarios.Scenario, error) {
	if subject == "" && external == "" {
		return list, nil
	}
	var command []string
	if external != "" {
		if subject == "" {
			subject = "external"
		}
		if subject != "external" {
			return nil, usageError("run: --subject-cmd runs an external subject; it does not go with --subject " + subject)
		}
		command = strings.Fields(external)
		if len(command) == 0 {
			return nil, usageError("run: --subject-cmd is empty")
		}
		// An absolute path, so isolated clients find it too; and a
		// missing program is a usage error now, not a failed trial.
		path, err := exec.LookPath(command[0])
		if err == nil {
			path, err = filepath.Abs(path)
		}
		if err != nil {
			return nil, usageError("run: --subject-cmd: " + err.Error())
		}
		command[0] = path
	}
	out := make([]scenarios.Scenario, 0, len(list))
	for _, s := range list {
		v, err := s.WithSubject(subject, command)
		if err != nil {
			return nil, usageError("run: --subject: " + err.Error())
		}
		out = append(out, v)
	}
	return out, nil
}
