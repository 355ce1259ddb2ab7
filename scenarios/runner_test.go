package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/scenarios"
)

func TestMain(m *testing.M) {
	if scenarios.IsWorker() { // an isolated client started by a trial in this test binary
		if err := scenarios.ServeWorker(context.Background(), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		fmt.Println("skipping scenario tests: redis-server/redis-sentinel not installed (make deps)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runTrial(t *testing.T, name string, seed uint64) scenarios.TrialResult {
	t.Helper()
	s, err := scenarios.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := scenarios.RunTrial(context.Background(), s, seed, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestRunTrial_FailoverLockLoss(t *testing.T) {
	tr := runTrial(t, "failover-lock-loss", 1)
	if got, want := tr.Observed, "unsafe"; got != want {
		t.Fatalf("observed %s, want %s; anomalies: %+v", got, want, tr.Check.Anomalies)
	}
	a := tr.Check.Anomalies[0]
	if a.Kind != checker.DoubleGrant || len(a.Windows) != 2 {
		t.Fatalf("first anomaly = %+v, want a double-grant with two lease windows", a)
	}
	if a.Windows[0].Node != "n1" || a.Windows[1].Node != "n2" {
		t.Errorf("double grant on %s then %s, want n1 (old master) then n2 (promoted replica)", a.Windows[0].Node, a.Windows[1].Node)
	}
	t.Log(a.Message)
}

func TestRunTrial_SingleBaseline(t *testing.T) {
	tr := runTrial(t, "single-baseline", 1)
	if got, want := tr.Observed, "safe"; got != want {
		t.Fatalf("observed %s, want %s; anomalies: %+v", got, want, tr.Check.Anomalies)
	}
	grants := 0
	for _, e := range tr.History {
		if e.F == "acquire" && e.Type == checker.OK {
			grants++
		}
	}
	if grants < 10 {
		t.Fatalf("only %d grants in the baseline; the workload did not run", grants)
	}
}

func TestRunTrial_GCPause(t *testing.T) {
	tr := runTrial(t, "gc-pause", 1)
	if got := tr.Check.Counts()[checker.StaleWrite]; got == 0 {
		t.Fatalf("no stale write; anomalies: %+v", tr.Check.Anomalies)
	}
}

func TestRunTrial_GCPauseFenced(t *testing.T) {
	tr := runTrial(t, "gc-pause-fenced", 1)
	if got, want := tr.Observed, "safe"; got != want {
		t.Fatalf("observed %s, want %s; anomalies: %+v", got, want, tr.Check.Anomalies)
	}
	// Safe must mean "the attack happened and fencing stopped it", not "nothing happened".
	if got := tr.Check.PreventedCounts()[checker.StaleWrite]; got == 0 {
		t.Fatalf("no prevented stale write: the pause did not hit the holder")
	}
}
