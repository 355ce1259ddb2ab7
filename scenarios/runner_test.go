package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/scenarios"
)

func TestMain(m *testing.M) {
	if scenarios.IsWorker() { // an isolated client started by a trial in this test binary
		if err := scenarios.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	scenarios.SilenceRedisLogs()
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		fmt.Println("skipping scenario tests: redis-server/redis-sentinel not installed (make deps)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// evidence checks, per scenario, that the trial did what the scenario says
// beyond the verdict: a "safe" mitigation must have met the attack, an
// "unsafe" one must name the right nodes.
var evidence = map[string]func(t *testing.T, tr scenarios.TrialResult){
	"failover-lock-loss": func(t *testing.T, tr scenarios.TrialResult) {
		a := first(t, tr, checker.DoubleGrant)
		if len(a.Windows) != 2 || a.Windows[0].Node != "n1" || a.Windows[1].Node != "n2" {
			t.Errorf("double grant %+v, want leases on n1 (old master) then n2 (promoted replica)", a.Windows)
		}
	},
	"failover-wait-replica": func(t *testing.T, tr scenarios.TrialResult) {
		if n := count(tr, checker.FAcquire, "acknowledged by enough replicas"); n == 0 {
			t.Error("no acquire was refused for lack of replica acknowledgement")
		}
	},
	"gc-pause": func(t *testing.T, tr scenarios.TrialResult) { first(t, tr, checker.StaleWrite) },
	"gc-pause-fenced": func(t *testing.T, tr scenarios.TrialResult) {
		if tr.Check.PreventedCounts()[checker.StaleWrite] == 0 {
			t.Error("no prevented stale write: the pause did not hit the holder")
		}
	},
	"watchdog-pause": func(t *testing.T, tr scenarios.TrialResult) { first(t, tr, checker.StaleWrite) },
	"network-delay-fenced": func(t *testing.T, tr scenarios.TrialResult) {
		if count(tr, checker.FWrite, "fenced") == 0 {
			t.Error("no write was fenced: the delayed write never met a newer token")
		}
	},
	"redlock-crash-restart": func(t *testing.T, tr scenarios.TrialResult) {
		a := first(t, tr, checker.DoubleGrant)
		if !strings.Contains(a.Message, "n3") {
			t.Errorf("double grant does not involve the restarted n3: %s", a.Message)
		}
	},
	"redlock-baseline": func(t *testing.T, tr scenarios.TrialResult) {
		kill := int64(0)
		for _, e := range tr.History {
			if e.F == checker.FNemesis && kill == 0 {
				kill = e.Time
			}
		}
		after := 0
		for _, e := range tr.History {
			if e.F == checker.FAcquire && e.Type == checker.OK && e.Time > kill {
				after++
			}
		}
		if after < 5 {
			t.Errorf("only %d grants after 2 of 5 nodes died; Redlock should stay available", after)
		}
	},
	"reply-loss-release-all": func(t *testing.T, tr scenarios.TrialResult) {
		if n := count(tr, checker.FAcquire, ""); n < 3 {
			t.Errorf("only %d grants; client 2 should acquire once n4 and n5 are gone", n)
		}
	},
	"single-baseline": func(t *testing.T, tr scenarios.TrialResult) {
		if n := count(tr, checker.FAcquire, ""); n < 10 {
			t.Errorf("only %d grants; the workload did not run", n)
		}
	},
}

// TestCatalogue runs every built-in scenario once and checks its verdict,
// and its evidence where the verdict alone could be met by doing nothing.
func TestCatalogue(t *testing.T) {
	for _, s := range scenarios.All() {
		t.Run(s.Name, func(t *testing.T) {
			tr, err := scenarios.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tr.Observed, string(s.Expect); got != want {
				t.Fatalf("observed %s, want %s; anomalies: %+v", got, want, tr.Check.Anomalies)
			}
			if check, ok := evidence[s.Name]; ok {
				check(t, tr)
			}
		})
	}
}

// first returns the first anomaly of kind k, failing the test without one.
func first(t *testing.T, tr scenarios.TrialResult, k checker.Kind) checker.Anomaly {
	t.Helper()
	for _, a := range tr.Check.Anomalies {
		if a.Kind == k {
			return a
		}
	}
	t.Fatalf("no %s among %+v", k, tr.Check.Anomalies)
	return checker.Anomaly{}
}

// count counts completed operations f: ok ones when errSub is empty, else
// failed or unknown ones whose error contains errSub.
func count(tr scenarios.TrialResult, f, errSub string) int {
	n := 0
	for _, e := range tr.History {
		if e.F != f || e.Type == checker.Invoke {
			continue
		}
		if (errSub == "" && e.Type == checker.OK) || (errSub != "" && e.Type != checker.OK && strings.Contains(e.Error, errSub)) {
			n++
		}
	}
	return n
}
