package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/results"
)

// inherits is a cheap comparison whose second arm, the fix, inherits the
// scenario's expect: unsafe and cannot meet it (a 2s lease, a 10ms hold).
const inherits = `name: compare-inherits
expect: unsafe
summary: a holder that overruns its lease
topology: {masters: 1}
lock: {kind: set-nx, ttl: 150ms, retry_delay: 10ms}
clients: 2
hold: 400ms
duration: 1200ms
arms:
  - name: overrun
  - name: fix
    lock: {ttl: 2s}
    hold: 10ms
    duration: 600ms
`

// TestCompare_OneAnswer runs a comparison whose fix arm does not match as
// two shards and merges them: every shard, the merge's exit code, the
// JUnit file, the summary, compare.json, the comparison's page and the
// arm's verdict.json all call the fix arm, and only it, a failure.
func TestCompare_OneAnswer(t *testing.T) {
	testredis.Require(t, false)
	dir := t.TempDir()
	file := filepath.Join(dir, "inherits.yaml")
	if err := os.WriteFile(file, []byte(inherits), 0o644); err != nil {
		t.Fatal(err)
	}
	shards := filepath.Join(dir, "shards")
	for _, sh := range []string{"1/2", "2/2"} {
		code, stdout, stderr := lockpick(t, "compare", "--file", file, "--trials", "2", "--quiet", "--shard", sh, "--out", shards)
		if code != exitMismatch || !strings.Contains(stderr, "fix (expect unsafe, observed safe)") || strings.Contains(stderr, "overrun (") {
			t.Errorf("shard %s: exit %d, stderr %q; want %d naming the fix arm alone", sh, code, stderr, exitMismatch)
		}
		if !strings.Contains(stdout, "(partial)") || strings.Contains(stdout, "p = ") {
			t.Errorf("shard %s prints its partial counts as a conclusion:\n%s", sh, stdout)
		}
	}
	merged, junit, summary := filepath.Join(dir, "merged"), filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.md")
	code, stdout, stderr := lockpick(t, "merge", shards, "--out", merged, "--junit", junit, "--summary", summary)
	if code != exitMismatch {
		t.Fatalf("merge: exit %d, want %d; stdout %q stderr %q", code, exitMismatch, stdout, stderr)
	}
	if !strings.Contains(stdout, "Fisher exact test") {
		t.Errorf("the merged comparison has no Fisher test:\n%s", stdout)
	}
	j := readText(t, junit)
	if !strings.Contains(j, `failures="1"`) || !strings.Contains(j, `name="compare-inherits[fix]"`) || !strings.Contains(j, "expected unsafe, observed safe") {
		t.Errorf("junit.xml does not fail the fix arm alone:\n%s", j)
	}
	sum := readText(t, summary)
	if !strings.Contains(sum, "- **compare-inherits[fix]**: expected unsafe, observed safe") || strings.Contains(sum, "- **compare-inherits[overrun]**") {
		t.Errorf("summary does not say why the fix arm alone failed:\n%s", sum)
	}
	for _, line := range strings.Split(sum, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue // not a row: the failures' reasons under the table
		}
		fix, bug := strings.Contains(line, "[fix]"), strings.Contains(line, "[overrun]")
		if (fix && !strings.Contains(line, "**no**")) || (bug && strings.Contains(line, "**no**")) {
			t.Errorf("summary row %q disagrees", line)
		}
	}
	folders, _ := filepath.Glob(filepath.Join(merged, "*-merged"))
	if len(folders) != 1 {
		t.Fatalf("merged folders: %v", folders)
	}
	var c results.Comparison
	if err := json.Unmarshal([]byte(readText(t, filepath.Join(folders[0], "compare.json"))), &c); err != nil {
		t.Fatal(err)
	}
	if got := c.Unmatched(); len(got) != 1 || !strings.HasPrefix(got[0], "fix ") {
		t.Errorf("compare.json: unmatched arms %q, want the fix arm", got)
	}
	if page := readText(t, filepath.Join(folders[0], "report.html")); !strings.Contains(page, "NOT matched: fix (expect unsafe, observed safe)") {
		t.Errorf("the comparison's page does not name the failed arm")
	}
	var v results.Verdict
	if err := json.Unmarshal([]byte(readText(t, filepath.Join(folders[0], "fix", "verdict.json"))), &v); err != nil {
		t.Fatal(err)
	}
	if v.Matched || v.Observed != "safe" || v.Expect != "unsafe" {
		t.Errorf("fix/verdict.json: expect %s, observed %s, matched %v", v.Expect, v.Observed, v.Matched)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
