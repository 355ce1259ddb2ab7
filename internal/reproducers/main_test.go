package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/scenario"
)

// TestReports_NameTheSuite: every run of the table names a built-in
// scenario of the reproducers suite (and an arm it has), every arm of such
// a scenario is in the table, every scenario of the suite reproduces some
// report, and a report has runs or the reason it has none, not both.
func TestReports_NameTheSuite(t *testing.T) {
	named := map[string][]string{}
	for _, r := range reports {
		if (len(r.Runs) == 0) == (r.Reason == "") {
			t.Errorf("%s: %d runs and reason %q; want runs or a reason", r.ID, len(r.Runs), r.Reason)
		}
		if r.ID == "" || !strings.HasPrefix(r.URL, "https://") || r.Saw == "" {
			t.Errorf("report %+v lacks its id, link or what users saw", r)
		}
		for _, u := range r.Runs {
			if u.File != "" {
				// A file whose lock programs are built first cannot be
				// loaded here; its arm must be there.
				b, err := os.ReadFile("../../" + u.File)
				if err != nil || !strings.Contains(string(b), "\n  - name: "+u.Arm+"\n") || !strings.Contains(string(b), "\nname: "+u.Scenario+"\n") {
					t.Errorf("%s: %s has no scenario %s with arm %q (%v)", r.ID, u.File, u.Scenario, u.Arm, err)
				}
				continue
			}
			s, err := scenario.Lookup(u.Scenario)
			if err != nil {
				t.Errorf("%s: %v", r.ID, err)
				continue
			}
			if !slices.Contains(s.Suites, "reproducers") {
				t.Errorf("%s: %s is not in the reproducers suite", r.ID, u.Scenario)
			}
			if (u.Arm == "") != (len(s.ArmNames()) == 0) || (u.Arm != "" && !slices.Contains(s.ArmNames(), u.Arm)) {
				t.Errorf("%s: arm %q of %s, which has arms %v", r.ID, u.Arm, u.Scenario, s.ArmNames())
			}
			if u.Version == "" {
				t.Errorf("%s: %s:%s names no version", r.ID, u.Scenario, u.Arm)
			}
			named[u.Scenario] = append(named[u.Scenario], u.Arm)
		}
	}
	for _, s := range scenario.All() {
		if !slices.Contains(s.Suites, "reproducers") {
			continue
		}
		arms, ok := named[s.Name]
		if !ok {
			t.Errorf("%s is in the reproducers suite but reproduces no report of the table", s.Name)
		}
		for _, a := range s.ArmNames() {
			if !slices.Contains(arms, a) {
				t.Errorf("arm %s of %s is not in the table", a, s.Name)
			}
		}
	}
	reproduced := 0
	for _, r := range reports {
		if len(r.Runs) > 0 {
			reproduced++
		}
	}
	if reproduced < 8 {
		t.Errorf("%d reports reproduced, want at least 8 (issue 35)", reproduced)
	}
}

// TestRender_FromRunFolders makes the table from two run folders, one of
// compare with an arm that did not match, one of run: the rows carry
// their counts, a miss is marked and makes the table not ok, and a
// scenario without a folder is "not run".
func TestRender_FromRunFolders(t *testing.T) {
	res, err := readResults("testdata/runs")
	if err != nil {
		t.Fatal(err)
	}
	table, ok := render(res, time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	if ok {
		t.Error("render says ok with an arm not matched and scenarios not run")
	}
	for _, want := range []string{
		"Measured 2026-11-27 with `make reproducers`: 20 trials an arm",
		"| [etcd-io/etcd#11456](https://github.com/etcd-io/etcd/issues/11456) | etcd 3.4's Lock RPC grants",
		"| `etcd-waiter-lease-expiry:v3lock` | affected: etcd 3.4.23's server Lock RPC (Debian's, which lockpick runs) | unsafe | unsafe | 20/20 | 0 |",
		"| `etcd-waiter-lease-expiry:mutex` |",
		"| safe | **unsafe** (not matched) | 2/19 | 1 |",
		"| `redsync-quorum-loss` | no fix: redsync v4.18.1, the newest release (the issue is open) | unsafe | unsafe | 20/20 | 0 |",
		"| `watchdog-pause:unfenced` | affected: every version (design); lockpick's model of Redisson's lock | not run |",
		"Not reproduced:\n\n| report | what users saw | why not |\n|---|---|---|\n| [redis/redis#6062, valkey-io/valkey PR #1238](https://github.com/redis/redis/issues/6062) |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// TestReplaceBetween keeps the page around the markers and replaces what
// is between them; a page without them is an error.
func TestReplaceBetween(t *testing.T) {
	page := "# title\n\n" + beginMarker + "\nold\nrows\n" + endMarker + "\n\nafter\n"
	got, err := replaceBetween(page, "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# title\n\n" + beginMarker + "\nnew\n" + endMarker + "\n\nafter\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := replaceBetween("no markers", "x"); err == nil {
		t.Error("a page without markers was accepted")
	}
}

// TestDocs_ReproducersPage: docs/reproducers.md has the generated table's
// markers and names every report of the table, reproduced or not.
func TestDocs_ReproducersPage(t *testing.T) {
	b, err := os.ReadFile("../../docs/reproducers.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if _, err := replaceBetween(page, ""); err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if !strings.Contains(page, "["+r.ID+"]("+r.URL+")") {
			t.Errorf("docs/reproducers.md does not name %s", r.ID)
		}
	}
}
