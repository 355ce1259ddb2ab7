package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTally_CountsMissedAttacks reads two run folders: one matched scenario
// with a conclusive trial that observed safe where stuck was expected (a
// missed attack), and one that did not match.
func TestTally_CountsMissedAttacks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "verdict.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", `{"scenario":"reply-loss","expect":"stuck","observed":"stuck","matched":true,
		"trial_results":[{"trial":1,"observed":"safe"},{"trial":2,"observed":"stuck"},{"trial":3,"observed":"inconclusive","reason":"no grant"}]}`)
	write("b", `{"scenario":"gc-pause","expect":"unsafe","observed":"safe","matched":false,
		"trial_results":[{"trial":1,"observed":"safe"}]}`)
	var tl tally
	if err := tl.add(dir, 1); err != nil {
		t.Fatal(err)
	}
	if tl.scenarios != 2 || len(tl.wrong) != 1 || len(tl.missed) != 2 || tl.trials != 4 || tl.conclusive != 3 || len(tl.inconclusive) != 1 {
		t.Errorf("tally = %+v; want 2 scenarios, 1 wrong, 2 missed, 4 trials, 3 conclusive, 1 inconclusive", tl)
	}
	if err := tl.add(t.TempDir(), 2); err == nil {
		t.Error("a round without verdicts was accepted")
	}
}
