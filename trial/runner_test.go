package trial_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

func TestMain(m *testing.M) {
	if trial.IsWorker() { // an isolated client started by a trial in this test binary
		if err := trial.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	trial.SilenceRedisLogs()
	os.Exit(m.Run())
}

// TestCatalogue runs every built-in scenario once and checks its verdict
// and its evidence: every fault fired with its effect and every requirement
// of the scenario file held (a "safe" mitigation met its attack), so a
// verdict cannot be met by doing nothing.
func TestCatalogue(t *testing.T) {
	testredis.Require(t, true)
	for _, s := range scenario.All() {
		t.Run(s.Name, func(t *testing.T) {
			tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			ev := tr.Evidence
			if !ev.Conclusive {
				t.Fatalf("inconclusive: %s", tr.Reason)
			}
			if got, want := tr.Observed, string(s.Expect); got != want {
				t.Fatalf("observed %s, want %s; anomalies: %+v", got, want, tr.Check.Anomalies)
			}
			for _, f := range ev.Faults {
				if f.Fired == nil || f.Effect == "" {
					t.Errorf("fault %+v fired without an observed effect", f)
				}
			}
			if len(ev.Required) == 0 {
				t.Error("no requirement was checked")
			}
			t.Logf("%s; %d notes", ev.Summary(), len(ev.Notes))
		})
	}
}

// first returns the first anomaly of kind k, failing the test without one.
func first(t *testing.T, tr trial.TrialResult, k checker.Kind) checker.Anomaly {
	t.Helper()
	for _, a := range tr.Check.Anomalies {
		if a.Kind == k {
			return a
		}
	}
	t.Fatalf("no %s among %+v", k, tr.Check.Anomalies)
	return checker.Anomaly{}
}

// TestNoLock_ResourceCheckSeesLostUpdates runs the no-lock control: without
// a lock, the resource check itself (not only the lease check) must see
// increments lost, or a safe verdict elsewhere would prove nothing.
func TestNoLock_ResourceCheckSeesLostUpdates(t *testing.T) {
	testredis.Require(t, false)
	s, err := scenario.Lookup("no-lock")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := first(t, tr, checker.LostUpdate)
	t.Log(a.Message)
}
