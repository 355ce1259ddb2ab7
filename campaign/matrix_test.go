package campaign_test

import (
	"context"
	"encoding/json"
	"errors"
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

const tinyMatrix = `title: tiny
rows:
  - {name: none, label: no lock}
  - {name: set-nx, label: SET NX PX}
columns:
  - {name: contention, label: contention}
  - {name: clock, label: clock jump}
cells:
  - {row: none, column: contention, scenario: no-lock}
  - {row: set-nx, column: contention, scenario: single-baseline}
  - {row: set-nx, column: clock, why: not scripted}
`

// TestRunMatrix_RatesEachCell runs a 2 × 2 matrix of two cheap catalogue
// scenarios (one unsafe, one safe) and an empty cell, and checks each
// cell's rate, the empty cell's reason and the folder written.
func TestRunMatrix_RatesEachCell(t *testing.T) {
	testredis.Require(t, false)
	m, err := campaign.ParseMatrix("tiny.yaml", []byte(tinyMatrix))
	if err != nil {
		t.Fatal(err)
	}
	r, dir, err := campaign.RunMatrix(context.Background(), m, &trial.Options{Trials: 2, Out: t.TempDir(), Parallel: 2}, "redis-server 0.0.0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"none.contention": 2, "set-nx.contention": 0}
	for _, c := range r.Cells {
		k := c.Row + "." + c.Column
		if c.Scenario == "" {
			if c.Result != nil {
				t.Errorf("%s: an empty cell was run", k)
			}
			continue
		}
		if c.Result == nil || c.Result.Conclusive != 2 || c.Result.Violations != want[k] || !c.Result.Matched {
			t.Errorf("%s: result %+v, want %d violations of 2 conclusive trials, matched", k, c.Result, want[k])
		}
		if _, err := os.Stat(filepath.Join(dir, k, "verdict.json")); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if r.Cells[0].Result != nil && r.Cells[0].Result.FirstViolationMedian <= 0 {
		t.Error("no-lock lost updates, but no first violation time was recorded")
	}
	md, err := os.ReadFile(filepath.Join(dir, "matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| no lock | **2/2** ", "| SET NX PX | 0/2 ", "— (1)", "1. not scripted", "redis-server 0.0.0"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("matrix.md lacks %q:\n%s", s, md)
		}
	}
	if err := os.Remove(filepath.Join(dir, "matrix.md")); err != nil {
		t.Fatal(err)
	}
	if err := campaign.Rerender(dir); err != nil {
		t.Fatal(err)
	}
	if again, err := os.ReadFile(filepath.Join(dir, "matrix.md")); err != nil || string(again) != string(md) {
		t.Errorf("matrix.md rendered again from matrix.json differs: %v\n%s", err, again)
	}
	var back results.Matrix
	if b, err := os.ReadFile(filepath.Join(dir, "matrix.json")); err != nil || json.Unmarshal(b, &back) != nil || len(back.Cells) != 3 {
		t.Errorf("matrix.json: %v, %d cells", err, len(back.Cells))
	}
}

func TestParseMatrix_SaysWhereACellIsWrong(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown scenario", strings.Replace(tinyMatrix, "scenario: no-lock", "scenario: no-lok", 1), "tiny.yaml:9:"},
		{"unknown arm", strings.Replace(tinyMatrix, "scenario: no-lock", "scenario: no-lock, arm: x", 1), "has no arm"},
		{"undeclared row", strings.Replace(tinyMatrix, "row: none,", "row: nobody,", 1), `row "nobody"`},
		{"twice", tinyMatrix + "  - {row: none, column: contention, why: x}\n", "tiny.yaml:12: a second cell"},
		{"neither", strings.Replace(tinyMatrix, "why: not scripted", "arm: x", 1), "names no scenario"},
		{"unknown field", strings.Replace(tinyMatrix, "why: not", "whY: not", 1), "field whY not found"},
	} {
		_, err := campaign.ParseMatrix("tiny.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, scenario.ErrBadScenario) {
			t.Errorf("%s: %v, want an ErrBadScenario containing %q", tc.name, err, tc.want)
		}
	}
}

// TestServices_IsValid parses the built-in matrix: every cell names a
// catalogue scenario and arm, or says why it is empty.
func TestServices_IsValid(t *testing.T) {
	m, err := campaign.Services()
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs() < 15 {
		t.Errorf("the built-in matrix runs %d cells", m.Runs())
	}
	if _, err := m.Select([]string{"etcd"}, []string{"no-such-column"}); !errors.Is(err, campaign.ErrUnknownLine) {
		t.Errorf("Select of an unknown column: %v", err)
	}
	_, err = m.Select(nil, []string{"failover"})
	if err == nil || !strings.Contains(err.Error(), `did you mean "leader-loss"`) || !strings.Contains(err.Error(), "crash-restart") {
		t.Errorf("Select of column failover: %v, want a hint at leader-loss and the list of columns", err)
	}
	_, err = m.Select([]string{"etdc"}, nil)
	if err == nil || !strings.Contains(err.Error(), `did you mean "etcd"`) {
		t.Errorf("Select of row etdc: %v, want a hint at etcd", err)
	}
}

// TestDocs_MatrixExampleIsAccepted parses the matrix file of docs/matrix.md.
func TestDocs_MatrixExampleIsAccepted(t *testing.T) {
	page, err := os.ReadFile("../docs/matrix.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(page), "```yaml\n# a matrix file")
	block, _, _ = strings.Cut("# a matrix file"+block, "```")
	if !ok {
		t.Fatal("docs/matrix.md has no matrix file example")
	}
	if _, err := campaign.ParseMatrix("matrix.md", []byte(block)); err != nil {
		t.Error(err)
	}
}

// A row with a lock program plays each of its cells with that program in
// place of the scenario's lock; a program that is not found empties the
// row's cells with the reason, and a bad capability is refused with its
// cell's line.
func TestMatrix_ProgramRow(t *testing.T) {
	const file = `title: programs
rows:
  - {name: mine, label: my lock, program: [PROG], shape: zookeeper, caps: [block, renew, fence]}
columns:
  - {name: pause, label: holder pause}
cells:
  - {row: mine, column: pause, scenario: zk-pause-holder, arm: fenced}
`
	prog := filepath.Join(t.TempDir(), "mylock")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := campaign.ParseMatrix("p.yaml", []byte(strings.Replace(file, "PROG", prog, 1)))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := m.Scenarios()
	if err != nil || len(ss) != 1 {
		t.Fatalf("scenarios %v, %v", ss, err)
	}
	if s := ss[0]; s.Name != "zk-pause-holder[fenced]@mylock" || s.Lock.Kind != "external" || !s.Fenced || len(s.Lock.Caps) != 3 {
		t.Errorf("the cell plays %s (lock %s, fenced %v, caps %v), want the fenced arm with the row's program", s.Name, s.Lock.Kind, s.Fenced, s.Lock.Caps)
	}
	if kept, notes := m.WithoutMissingPrograms(); len(notes) != 0 || kept.Runs() != 1 {
		t.Errorf("a program that is there: notes %q, %d cells to run", notes, kept.Runs())
	}
	m, err = campaign.ParseMatrix("p.yaml", []byte(strings.Replace(file, "PROG", "no/such/lock", 1)))
	if err != nil {
		t.Fatal(err)
	}
	kept, notes := m.WithoutMissingPrograms()
	if len(notes) != 1 || !strings.Contains(notes[0], "no/such/lock is not found") || kept.Runs() != 0 || !strings.Contains(kept.Cells[0].Why, "no/such/lock") {
		t.Errorf("a program that is not there: notes %q, %d cells to run, why %q", notes, kept.Runs(), kept.Cells[0].Why)
	}
	_, err = campaign.ParseMatrix("p.yaml", []byte(strings.Replace(file, "fence]", "fencing]", 1)))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:7:") || !strings.Contains(err.Error(), `"fencing"`) {
		t.Errorf("a bad capability: %v, want it refused at p.yaml:7", err)
	}
}
