package campaign_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lockpick/lockpick/trial"
)

// TestMain serves as an isolated client when a trial started by a test in
// this binary runs one, and otherwise runs the tests.
func TestMain(m *testing.M) {
	if trial.IsWorker() {
		if err := trial.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	trial.SilenceRedisLogs()
	os.Exit(m.Run())
}
