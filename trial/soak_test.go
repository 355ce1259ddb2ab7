package trial_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// soakFor runs a soak of the named scenario for d in a temporary folder and
// checks it against `lockpick check` (see soakWith).
func soakFor(t *testing.T, ctx context.Context, name string, d time.Duration) (*results.Verdict, string) {
	t.Helper()
	return soakWith(t, ctx, name, trial.SoakOptions{For: d})
}

// soakWith is soakFor with options (Out and Anomaly are set here). Each
// round is judged alone, so `lockpick check` of a round's window gives
// that round's anomalies, and the whole history (history.jsonl.gz) the
// same safety anomalies (rounds share no lease); liveness is judged over
// the whole history there, so it may differ.
func soakWith(t *testing.T, ctx context.Context, name string, opt trial.SoakOptions) (*results.Verdict, string) {
	t.Helper()
	s, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	var found []trial.SoakAnomaly
	opt.Out = t.TempDir()
	opt.Anomaly = func(a trial.SoakAnomaly) { found = append(found, a) }
	v, dir, err := trial.Soak(ctx, s, opt)
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
	copt := trial.CheckOptions(s)
	r, sum, err := checker.CheckFile(filepath.Join(dir, checker.HistoryFileGz), copt, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sum.Events, v.Soak.Events; got != want {
		t.Errorf("history.jsonl.gz has %d events, the soak recorded %d", got, want)
	}
	whole := map[string]int{}
	for _, a := range r.Anomalies {
		if a.Kind == checker.DoubleGrant || a.Kind == checker.StaleWrite {
			whole[string(a.Kind)]++
		}
	}
	safety := map[string]int{"double-grant": v.Soak.Anomalies["double-grant"], "stale-write": v.Soak.Anomalies["stale-write"]}
	if !mapsEqual(whole, safety) {
		t.Errorf("checking history.jsonl.gz found %v, the soak %v", whole, v.Soak.Anomalies)
	}
	for _, tr := range v.TrialResults {
		if tr.Dir == "" {
			continue
		}
		r, _, err := checker.CheckFile(filepath.Join(dir, tr.Dir, checker.HistoryFile), copt, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for k, n := range r.Counts() {
			got[string(k)] = n
		}
		if !mapsEqual(got, tr.Anomalies) {
			t.Errorf("lockpick check of round %d's window found %v, the soak %v", tr.Trial, got, tr.Anomalies)
		}
	}
	if len(found) > sumOf(v.Soak.Anomalies) || (sumOf(v.Soak.Anomalies) > 0 && len(found) == 0) {
		t.Errorf("reported %d anomalies as found, the verdict counts %v", len(found), v.Soak.Anomalies)
	}
	if n := len(v.TrialResults); n > 0 && sumOf(v.TrialResults[n-1].Anomalies) > 0 &&
		!slices.ContainsFunc(found, func(a trial.SoakAnomaly) bool { return a.Round == v.TrialResults[n-1].Trial }) {
		t.Errorf("the last round's anomalies %v were not reported as found", v.TrialResults[n-1].Anomalies)
	}
	if v.WallSeconds != v.Soak.WallSeconds { // not the sum of the rounds' durations
		t.Errorf("wall_seconds %.1f, soak's %.1f; want the soak's wall time", v.WallSeconds, v.Soak.WallSeconds)
	}
	for _, m := range v.Soak.Memory {
		if m.RSSBytes > v.Soak.PeakRSSBytes {
			t.Errorf("peak RSS %d below the sample %+v", v.Soak.PeakRSSBytes, m)
		}
	}
	return v, dir
}

func TestSoak_Rounds(t *testing.T) {
	testredis.Require(t, false)
	// Rounds of 2 s; one starts every 2 s, or later when an acquire cut
	// short by a round's end may hold the lock (TTL 2 s): 2 to 4 rounds.
	v, _ := soakFor(t, context.Background(), "single-baseline", 8*time.Second)
	if got := v.Soak.Rounds; got < 2 || got > 4 {
		t.Fatalf("rounds = %d, want 2 to 4", got)
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

// TestSoak_FindsDoubleGrantEveryRound: between rounds the soak waits out
// the leases and puts the topology back (n1 master, n2 its replica), so the
// schedule, written for the start, loses the lock in every round; each
// round's own history reproduces its double grant, and the report opens on
// the first.
func TestSoak_FindsDoubleGrantEveryRound(t *testing.T) {
	testredis.Require(t, true)
	// A round of 4 s; then the first client's lease (8 s) runs out, as
	// its release failed on the promoted node, and the topology is put
	// back (about 2 s): the second round starts at 15 s.
	v, dir := soakWith(t, context.Background(), "failover-lock-loss", trial.SoakOptions{For: 30 * time.Second, Every: 15 * time.Second})
	if v.Soak.Rounds != 2 || v.Soak.Restored != 1 {
		t.Fatalf("%d rounds, topology put back %d times; want 2 and 1", v.Soak.Rounds, v.Soak.Restored)
	}
	for _, r := range v.TrialResults {
		if r.Observed != "unsafe" || r.Anomalies["double-grant"] == 0 {
			t.Errorf("round %d: %s with %v (%s); want unsafe with a double grant", r.Trial, r.Observed, r.Anomalies, r.Reason)
		}
	}
	if v.Soak.FirstAnomaly != 1 || v.Soak.Window == "" {
		t.Fatalf("first anomaly %d in %q; want round 1 with its window", v.Soak.FirstAnomaly, v.Soak.Window)
	}
	h, err := checker.ReadFile(filepath.Join(dir, v.Soak.Window))
	if err != nil {
		t.Fatal(err)
	}
	if r := checker.Check(h, trial.CheckOptions(mustRunScenario(t, dir))); !slices.ContainsFunc(r.Anomalies, func(a checker.Anomaly) bool { return a.Kind == checker.DoubleGrant }) {
		t.Errorf("round 1's history alone gives %v; want its double grant", r.Anomalies)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.Contains(report, []byte("Round 1: the first anomaly")) {
		t.Errorf("report.html (%v) does not open on round 1's anomaly", err)
	}
	if err := os.Remove(filepath.Join(dir, "report.html")); err != nil {
		t.Fatal(err)
	}
	if err := campaign.Rerender(dir); err != nil {
		t.Fatalf("lockpick report of the soak: %v", err)
	}
	if again, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !bytes.Contains(again, []byte("Round 1: the first anomaly")) {
		t.Errorf("report.html rendered again (%v) does not open on round 1's anomaly", err)
	}
	if n := len(v.Soak.Memory); n == 0 || v.Soak.Memory[n-1].RSSBytes == 0 {
		t.Errorf("memory samples %+v; want one at the end at least", v.Soak.Memory)
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

func mustRunScenario(t *testing.T, dir string) scenario.Scenario {
	t.Helper()
	s, err := campaign.RunScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSoak_EveryShorterThanARound(t *testing.T) {
	s, err := scenario.Lookup("failover-lock-loss")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = trial.Soak(context.Background(), s, trial.SoakOptions{For: time.Minute, Every: time.Second, Out: t.TempDir()})
	if !errors.Is(err, scenario.ErrBadScenario) {
		t.Fatalf("a round every 1s of a 4s scenario: %v; want ErrBadScenario", err)
	}
}

// TestSoak_IsolatedClient: gc-pause's holder runs in a process of its own,
// started again each round (the schedule pauses it); its events reach the
// soak late and are checked in time order when the round ends.
func TestSoak_IsolatedClient(t *testing.T) {
	testredis.Require(t, false)
	v, _ := soakWith(t, context.Background(), "gc-pause", trial.SoakOptions{For: 9 * time.Second, Every: 4500 * time.Millisecond})
	if v.Soak.Rounds != 2 || v.Soak.CheckNote != "" && !strings.Contains(v.Soak.CheckNote, "lost update") {
		t.Fatalf("%d rounds, check note %q; want 2 checked in time order", v.Soak.Rounds, v.Soak.CheckNote)
	}
	for _, r := range v.TrialResults {
		if r.Observed != "unsafe" {
			t.Errorf("round %d: %s (%s); want unsafe", r.Trial, r.Observed, r.Reason)
		}
	}
}

// TestSoak_SlowLockProgram soaks failover-lock-loss with a lock program
// that takes 1 s to start: its clients are warmed up before the first
// round, as a trial's are, so the kill of n1 meets the key and the round
// shows the double grant (started on its first acquire, the program's
// start-up ate the round's schedule and the kill met no lock).
func TestSoak_SlowLockProgram(t *testing.T) {
	testredis.Require(t, true)
	s, err := scenario.Lookup("failover-lock-loss")
	if err != nil {
		t.Fatal(err)
	}
	slow := []string{"sh", "-c", "sleep 1; exec " + buildExtlock(t)[0]}
	if s, err = s.WithSubject("external", slow); err != nil {
		t.Fatal(err)
	}
	v, _, err := trial.Soak(context.Background(), s, trial.SoakOptions{For: 5 * time.Second, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.TrialResults) != 1 || v.TrialResults[0].Anomalies["double-grant"] == 0 {
		t.Fatalf("rounds %+v; want one round with the double grant", v.TrialResults)
	}
}
