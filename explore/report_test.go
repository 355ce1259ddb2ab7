package explore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/explore"
	"github.com/lockpick/lockpick/scenario"
)

// A flaky finding's report says how its replays went and offers a replay
// that runs; the hold reads as a duration; starving trials have a color.
func TestWriteReport_FlakyFindingAndStarvingTrials(t *testing.T) {
	sched := explore.Schedule{Index: 7, Seed: 9, Hold: scenario.Duration(1140 * time.Millisecond), Faults: noisy().Faults}
	res := &explore.Result{Scenario: "fake", Seed: 1, Budget: "10m0s",
		Trials:    []explore.Tried{{Schedule: sched, Observed: "starves", EndedAt: 3}, {Schedule: sched, Observed: "unsafe", EndedAt: 5}},
		Exercised: map[string]int{"pause-client c1": 2, "restart n1": 1},
		Flaky: []explore.Finding{{File: "flaky.yaml", Original: sched, Kind: "double-grant", Anomaly: "double-grant: two holders",
			Shrunk: explore.Shrunk{K: 4, N: 5, Steps: []explore.ShrinkStep{{Change: "confirm the finding", Replays: 2, Reproduced: 0}}}}},
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := explore.WriteReport(path, noisy(), res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, bad := range []string{"0 of 0", "--trials 0", "hold 1140000000", "Shrunk from"} {
		if strings.Contains(html, bad) {
			t.Errorf("report says %q", bad)
		}
	}
	for _, want := range []string{"<code>pause-client c1</code> × 2, <code>restart n1</code> × 1", "hold 1.14s", "broke the lock 0 of 2 times", "--trials 10", `.starves{fill:`, `class="starves"/></svg> starves`} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A measured finding states its rate with the 95% Wilson interval.
func TestFinding_Rate(t *testing.T) {
	fd := explore.Finding{Reproduced: 8, Measured: 10, Interval: [2]float64{0.4902, 0.9433}}
	if got, want := fd.Rate(), "8 of 10 (95% CI 49–94%)"; got != want {
		t.Errorf("Rate() = %q, want %q", got, want)
	}
}
