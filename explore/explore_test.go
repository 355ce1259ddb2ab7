package explore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/explore"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/scenario"
)

// A real search: SET NX PX on one node without persistence, restarts only.
// A restart wipes the holder's key, so the search finds a double grant,
// shrinks it, and writes a minimal scenario that reads back.
func TestExplore_FindsAndShrinksOnRealNodes(t *testing.T) {
	testredis.Require(t, false)
	out := t.TempDir()
	res, err := explore.Explore(context.Background(), lookup(t, "single-baseline"), explore.Options{
		Faults: []string{"restart"}, MaxTrials: 4, Seed: 1, Measure: 3, Target: 0.5, Out: out,
		Shrink: explore.ShrinkOptions{K: 2, N: 3, MaxReplays: 12},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 1 {
		t.Fatalf("findings = %d, want 1", len(res.Findings))
	}
	fd := res.Findings[0]
	if fd.Kind != "double-grant" || len(fd.Minimal) == 0 || len(fd.Minimal) > len(fd.Original.Faults) {
		t.Errorf("finding %s with %d faults (original %d), want a double-grant with fewer or as many faults", fd.Kind, len(fd.Minimal), len(fd.Original.Faults))
	}
	if fd.Shrunk.Replays == 0 || fd.Measured != 3 {
		t.Errorf("shrink replays %d, measured %d", fd.Shrunk.Replays, fd.Measured)
	}
	min, err := scenario.LoadFile(filepath.Join(res.Dir, "minimal.yaml"))
	if err != nil {
		t.Fatalf("minimal.yaml does not read back: %v", err)
	}
	if min.Expect != scenario.Unsafe || !strings.Contains(min.Explain, "explore") {
		t.Errorf("minimal.yaml: expect %s, explain %q", min.Expect, min.Explain)
	}
	if !strings.Contains(min.Name, "-explored-seed") {
		t.Errorf("minimal.yaml is named %q, not apart from the scenario it came from", min.Name)
	}
	for _, f := range []string{"explore.json", "report.html", "minimal-original.yaml", "minimal-original-history.jsonl", fd.ReplayDir + "/verdict.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("explore folder lacks %s", f)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(out, "*.partial")); len(matches) > 0 {
		t.Errorf("left half-written: %v", matches)
	}
}

// A safe configuration stays quiet: latency alone cannot break SET NX PX.
func TestExplore_SafeStaysQuiet(t *testing.T) {
	testredis.Require(t, false)
	res, err := explore.Explore(context.Background(), lookup(t, "single-baseline"), explore.Options{
		Faults: []string{"latency"}, MaxTrials: 2, Seed: 3, Out: t.TempDir()})
	if !errors.Is(err, explore.ErrFoundNothing) {
		t.Fatalf("err = %v, want no finding", err)
	}
	if len(res.Trials) != 2 || len(res.Findings) != 0 {
		t.Errorf("%d trials, %d findings", len(res.Trials), len(res.Findings))
	}
	for _, tr := range res.Trials {
		if tr.Observed == "unsafe" || tr.Observed == "inconclusive" {
			t.Errorf("schedule %d (%s): %s %s", tr.Schedule.Index, tr.Schedule.Describe(), tr.Observed, tr.Reason)
		}
	}
}
