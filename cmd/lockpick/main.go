// Command lockpick attacks Redis locks with real faults and checks the
// recorded history for violations of mutual exclusion.
package main

import (
	"errors"
	"fmt"
	"os"
)

// Exit codes of DESIGN.md.
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

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	code := exitUsage // cobra's own errors are all usage errors
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if code != exitMismatch || ee == nil || ee.err != nil {
		fmt.Fprintln(os.Stderr, "lockpick:", err)
	}
	os.Exit(code)
}
