// Command lockpick attacks Redis locks with real faults and checks the
// recorded history for violations of mutual exclusion.
package main

import (
	"context"

	"errors"
	"fmt"
	"github.com/lockpick/lockpick/trial"
	"io"
	"os"
)

// Exit codes, as docs/verdicts.md lists them.
const (
	exitOK       = 0 // every verdict matched (check: no anomaly)
	exitMismatch = 1 // a verdict did not match (check: an anomaly)
	exitUsage    = 2 // bad usage or a bad scenario file
	exitInfra    = 3 // the harness failed; never a verdict
)

// An exitError carries the process exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func main() {
	if trial.IsWorker() {
		os.Exit(serveWorker())
	}
	trial.SilenceRedisLogs()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// serveWorker plays one isolated client of a trial, started by the runner.
func serveWorker() int {
	if err := trial.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lockpick worker:", err)
		return exitInfra
	}
	return exitOK
}

// run executes the command line args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	code := exitUsage // cobra's own errors are all usage errors
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if ee == nil || ee.err != nil {
		fmt.Fprintln(stderr, "lockpick:", err)
	}
	return code
}
