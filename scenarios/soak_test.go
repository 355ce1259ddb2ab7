package scenarios_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenarios"
)

// soakFor runs a soak of the named scenario for d in a temporary folder and
// checks that its compressed history gives, checked afresh, the anomalies
// the soak found.
func soakFor(t *testing.T, ctx context.Context, name string, d time.Duration) (*results.Verdict, string) {
	t.Helper()
	s, err := scenarios.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	var found []scenarios.SoakAnomaly
	v, dir, err := scenarios.Soak(ctx, s, scenarios.SoakOptions{For: d, Out: t.TempDir(),
		Anomaly: func(a scenarios.SoakAnomaly) { found = append(found, a) }})
	if err != nil {
		t.Fatal(err)
	}
	var onDisk results.Verdict
	b, err := os.ReadFile(filepath.Join(dir, "verdict.json"))
	if err == nil {
		err = json.Unmarshal(b, &onDisk)
	}
	if err != nil || onDisk.Soak == nil {
		t.Fatalf("verdict.json: %v, soak section %v", err, onDisk.Soak)
	}
	r, sum, err := checker.CheckFile(filepath.Join(dir, checker.HistoryFileGz), scenarios.CheckOptions(s), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sum.Events, v.Soak.Events; got != want {
		t.Errorf("history.jsonl.gz has %d events, the soak recorded %d", got, want)
	}
	kinds := map[string]int{}
	for _, a := range r.Anomalies {
		kinds[string(a.Kind)]++
	}
	if !mapsEqual(kinds, v.Soak.Anomalies) {
		t.Errorf("checking history.jsonl.gz found %v, the soak %v", kinds, v.Soak.Anomalies)
	}
	if len(found) > sumOf(v.Soak.Anomalies) {
		t.Errorf("reported %d anomalies as found, the verdict counts %v", len(found), v.Soak.Anomalies)
	}
	return v, dir
}

func TestSoak_Rounds(t *testing.T) {
	testredis.Require(t, false)
	v, _ := soakFor(t, context.Background(), "single-baseline", 6*time.Second)
	if got, want := v.Soak.Rounds, 3; got != want {
		t.Fatalf("rounds = %d, want %d", got, want)
	}
	if v.Observed != "safe" || !v.Matched || v.Soak.Partial || v.Soak.Events == 0 || v.Soak.PeakRSSBytes == 0 {
		t.Errorf("observed %s (matched %v), soak %+v; want a safe, whole soak", v.Observed, v.Matched, *v.Soak)
	}
	for _, r := range v.TrialResults {
		if r.Observed != "safe" {
			t.Errorf("round %d: %s (%s)", r.Trial, r.Observed, r.Reason)
		}
	}
}

func TestSoak_FindsDoubleGrant(t *testing.T) {
	testredis.Require(t, true)
	// One round: the schedule does not put the topology back as it was, so
	// a second round of this scenario has no replica to promote (docs/soak.md).
	v, _ := soakFor(t, context.Background(), "failover-lock-loss", 4*time.Second)
	if v.Observed != "unsafe" || v.Soak.Anomalies["double-grant"] == 0 {
		t.Fatalf("observed %s with %v, want unsafe with a double-grant", v.Observed, v.Soak.Anomalies)
	}
}

func TestSoak_Interrupted(t *testing.T) {
	testredis.Require(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Second, cancel)
	v, dir := soakFor(t, ctx, "single-baseline", time.Minute)
	if !v.Soak.Partial || v.Soak.Stopped != "interrupted" {
		t.Fatalf("soak %+v, want partial, interrupted", *v.Soak)
	}
	if v.Soak.Rounds < 1 || v.Soak.Rounds > 3 || v.Observed != "safe" {
		t.Errorf("%d rounds observed %s; want the 2 rounds played before the interrupt, safe", v.Soak.Rounds, v.Observed)
	}
	if _, err := os.Stat(dir + ".partial"); err == nil {
		t.Errorf("%s.partial left behind", dir)
	}
}

func mapsEqual(a, b map[string]int) bool {
	ka, kb := keysOf(a), keysOf(b)
	if !slices.Equal(ka, kb) {
		return false
	}
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	return true
}

func keysOf(m map[string]int) []string {
	var ks []string
	for k, n := range m {
		if n > 0 {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
