package campaign_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// overrun is a cheap scenario whose arms are deterministic: holding past
// the TTL always loses updates, a short hold never does.
const overrun = `name: merge-overrun
expect: unsafe
summary: a holder that overruns its lease
topology: {masters: 1}
lock: {kind: set-nx, ttl: 150ms, retry_delay: 10ms}
clients: 2
hold: 400ms
duration: 1200ms
arms:
  - name: overrun
  - name: short-hold
    expect: safe
    lock: {ttl: 2s}
    hold: 10ms
    duration: 600ms
`

// TestMerge_EqualsUnshardedRun runs a comparison whole and as 3 shards and
// checks that merging the shards gives the whole run's trials, seeds and
// verdicts, arm by arm.
func TestMerge_EqualsUnshardedRun(t *testing.T) {
	testredis.Require(t, false)
	s, err := scenario.Parse("overrun.yaml", []byte(overrun))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	const trials, n = 4, 3
	opt := trial.Options{Trials: trials, Seed: 7, Out: filepath.Join(out, "whole"), Parallel: 2}
	whole, _, err := campaign.Compare(context.Background(), s, nil, &opt)
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	for i := 1; i <= n; i++ {
		o := opt
		o.Out, o.Shard = filepath.Join(out, "shards"), results.Shard{Index: i, Count: n}
		c, dir, err := campaign.Compare(context.Background(), s, nil, &o)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.Arms[0].Trials, len(o.Shard.Trials(trials)); got != want {
			t.Errorf("shard %d ran %d trials per arm, want %d", i, got, want)
		}
		shards = append(shards, dir)
	}
	merged, err := campaign.Merge(shards, filepath.Join(out, "merged"))
	if err != nil {
		t.Fatal(err)
	}
	if len(merged) != 1 || merged[0].Comparison == nil {
		t.Fatalf("merged = %+v, want one comparison", merged)
	}
	m := merged[0].Comparison
	if m.Scenario != s.Name || m.Trials != trials || m.Shard != "" {
		t.Errorf("merged comparison: scenario %q, %d trials, shard %q", m.Scenario, m.Trials, m.Shard)
	}
	for i, a := range whole.Arms {
		b := m.Arms[i]
		if a.Arm != b.Arm || a.Trials != b.Trials || a.Violations != b.Violations || a.Conclusive != b.Conclusive {
			t.Errorf("arm %s: whole %+v, merged %+v", a.Arm, a, b)
		}
	}
	for _, arm := range s.ArmNames() {
		w := readVerdict(t, filepath.Dir(filepath.Dir(wholeArm(t, out))), arm)
		g := readVerdict(t, merged[0].Dir, arm)
		if w.Observed != g.Observed || w.Matched != g.Matched || w.TrialsViolated != g.TrialsViolated || w.Trials != g.Trials {
			t.Errorf("arm %s: whole observed %s (%d/%d), merged %s (%d/%d)", arm, w.Observed, w.TrialsViolated, w.Trials, g.Observed, g.TrialsViolated, g.Trials)
		}
		for j, wt := range w.TrialResults {
			gt := g.TrialResults[j]
			if wt.Trial != gt.Trial || wt.Seed != gt.Seed || wt.Dir != gt.Dir || wt.Observed != gt.Observed {
				t.Errorf("arm %s trial %d: whole %d seed %d %s in %s, merged %d seed %d %s in %s", arm, j,
					wt.Trial, wt.Seed, wt.Observed, wt.Dir, gt.Trial, gt.Seed, gt.Observed, gt.Dir)
			}
			if _, err := os.Stat(filepath.Join(merged[0].Dir, arm, gt.Dir, "history.jsonl")); err != nil {
				t.Errorf("merged trial folder: %v", err)
			}
		}
		if _, err := os.Stat(filepath.Join(merged[0].Dir, arm, "report.html")); err != nil {
			t.Errorf("merged arm report: %v", err)
		}
	}

	// Shards that do not fit are refused, naming why, and write nothing.
	refused := filepath.Join(out, "refused")
	unsafeTrial := func(v *results.Verdict) int { // the first unsafe trial, made safe
		for i, tr := range v.TrialResults {
			if tr.Observed == "unsafe" {
				v.TrialResults[i].Observed, v.TrialResults[i].Anomalies = "safe", nil
				return tr.Trial
			}
		}
		t.Fatalf("%s: no unsafe trial to edit", v.Scenario)
		return 0
	}
	var edTrial int
	safeTrial := editedVerdict(t, shards[2], "overrun", func(v *results.Verdict) { edTrial = unsafeTrial(v) })
	safeVerdict := editedVerdict(t, shards[2], "overrun", func(v *results.Verdict) {
		unsafeTrial(v)
		v.Observed, v.Matched, v.TrialsViolated, v.Anomalies = "safe", false, 0, nil
	})
	safeSum := editedVerdict(t, shards[2], "overrun", func(v *results.Verdict) { v.Observed = "safe" })
	for _, tc := range []struct {
		name string
		dirs []string
		want string
		err  error
	}{
		{"missing", shards[:2], "shard 3/3 is missing", nil},
		{"missing, named by its comparison", shards[:2], "(compare of ", nil},
		{"twice", []string{shards[0], shards[1], shards[2], shards[1]}, "shard 2/3 given twice", nil},
		{"twice, the same folder", []string{shards[0], shards[1], shards[2], shards[1]}, "the same folder both times", nil},
		{"not a shard", []string{filepath.Dir(wholeArm(t, out))}, "not a shard", nil},
		{"other seed", []string{shards[0], shards[1], edited(t, shards[2], func(m *results.Manifest) { m.Seed++ })}, "differ in seed", nil},
		{"other version", []string{shards[0], shards[1], edited(t, shards[2], func(m *results.Manifest) { m.Version += "x" })}, "differ in lockpick version", nil},
		{"other build", []string{shards[0], shards[1], edited(t, shards[2], func(m *results.Manifest) { m.Build += "0" })}, "different lockpick builds", nil},
		{"no build", []string{shards[0], shards[1], edited(t, shards[2], func(m *results.Manifest) { m.Build = "" })}, "records no lockpick build", nil},
		{"trial edited", []string{shards[0], shards[1], safeTrial}, fmt.Sprintf("trial %d is recorded safe", edTrial), campaign.ErrRecordDiffers},
		{"trial and verdict edited", []string{shards[0], shards[1], safeVerdict}, fmt.Sprintf("trial %d is recorded safe", edTrial), campaign.ErrRecordDiffers},
		{"verdict edited", []string{shards[0], shards[1], safeSum}, "observed is safe; its trials give unsafe", campaign.ErrRecordDiffers},
		{"other file", []string{shards[0], shards[1], edited(t, shards[2], func(m *results.Manifest) { m.ScenarioSHA256 = "0" })}, "different scenario files", nil},
		{"other trial count", []string{shards[0], shards[1], edited(t, shards[2], func(m *results.Manifest) { m.Trials++ })}, "differ in trial count", nil},
	} {
		if tc.err == nil {
			tc.err = campaign.ErrShardsDontFit
		}
		_, err := campaign.Merge(tc.dirs, refused)
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %v with %q", tc.name, err, tc.err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(refused); len(entries) > 0 {
		t.Errorf("refused merges left %d entries in %s", len(entries), refused)
	}

	// A download with a folder per machine, each shard one level deeper.
	nested := filepath.Join(t.TempDir(), "download")
	for i, sd := range shards {
		if err := os.CopyFS(filepath.Join(nested, fmt.Sprintf("machine-%d", i+1), filepath.Base(sd)), os.DirFS(sd)); err != nil {
			t.Fatal(err)
		}
	}
	if found, err := campaign.ShardFolders(nested); err != nil || len(found) != len(shards) {
		t.Errorf("ShardFolders of a folder per machine: %v, %v; want the %d shards one level down", found, err, len(shards))
	}
}

// wholeArm returns the verdict.json of the whole comparison's first arm.
func wholeArm(t *testing.T, out string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(out, "whole", "*", "overrun", "verdict.json"))
	if len(m) != 1 {
		t.Fatalf("whole run folder: %v", m)
	}
	return m[0]
}

// edited copies a compare shard folder and edits its arms' manifests.
func edited(t *testing.T, dir string, edit func(*results.Manifest)) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	ms, _ := filepath.Glob(filepath.Join(cp, "*", results.ManifestFile))
	for _, p := range ms {
		m, err := results.ReadManifest(filepath.Dir(p))
		if err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}

// editedVerdict copies a compare shard folder and edits the verdict.json
// of its arm.
func editedVerdict(t *testing.T, dir, arm string, edit func(*results.Verdict)) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	v := readVerdict(t, cp, arm)
	edit(&v)
	b, _ := json.Marshal(&v)
	if err := os.WriteFile(filepath.Join(cp, arm, "verdict.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return cp
}

func readVerdict(t *testing.T, dir, arm string) results.Verdict {
	t.Helper()
	var v results.Verdict
	b, err := os.ReadFile(filepath.Join(dir, arm, "verdict.json"))
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}
