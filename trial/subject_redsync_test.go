package trial_test

import (
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/scenario"
)

func TestRedsync_CrashRestart(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	tr := runWith(t, "redlock-crash-restart", "redsync", nil, nil)
	if got, want := tr.Observed, string(scenario.Unsafe); got != want {
		t.Fatalf("observed %s, want %s", got, want)
	}
	// The grants name their majorities, which redsync does not tell: the
	// restarted n3 must be in both.
	a := first(t, tr, checker.DoubleGrant)
	if len(a.Windows) != 2 || !strings.Contains(a.Windows[0].Node, "n3") || !strings.Contains(a.Windows[1].Node, "n3") {
		t.Errorf("double grant %+v, want two majorities sharing the restarted n3", a.Windows)
	}
}

func TestRedsync_CrashRestartWithoutFaults(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	wantSafe(t, runWith(t, "redlock-crash-restart", "redsync", nil, noFaults), 2)
}

func TestRedsync_Baseline(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	wantSafe(t, runWith(t, "redlock-baseline", "redsync", nil, nil), 10)
}
