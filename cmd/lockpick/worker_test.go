package main

import (
	"os"
	"testing"

	"github.com/lockpick/lockpick/trial"
)

// TestMain lets this test binary serve as an isolated client when a trial
// started by a test re-executes it.
func TestMain(m *testing.M) {
	if trial.IsWorker() {
		os.Exit(serveWorker())
	}
	os.Exit(m.Run())
}
