package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockpick/lockpick/results"
)

// outcomes holds each arm's verdict over its trials by scenario, then by
// arm (the arm "" of a scenario run without arms), as compare.json has them.
type outcomes map[string]map[string]results.ArmResult

// readResults reads, for each scenario of the reports, the newest run
// folder under dir/<scenario>: its compare.json, or its verdict.json for
// a scenario run without arms. A scenario without a folder is left out
// (the table says it was not run).
func readResults(dir string) (outcomes, error) {
	res := outcomes{}
	for _, u := range scenarios() {
		folders, err := filepath.Glob(filepath.Join(dir, u.Scenario, "*"))
		if err != nil {
			return nil, err
		}
		sort.Strings(folders)
		if len(folders) == 0 {
			continue
		}
		f := folders[len(folders)-1]
		arms, err := readFolder(f)
		if err != nil {
			return nil, err
		}
		res[u.Scenario] = arms
	}
	return res, nil
}

// readFolder reads one run folder of compare (its compare.json) or of run
// (its verdict.json, as the arm "").
func readFolder(f string) (map[string]results.ArmResult, error) {
	arms := map[string]results.ArmResult{}
	if b, err := os.ReadFile(filepath.Join(f, "compare.json")); err == nil {
		var c results.Comparison
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, a := range c.Arms {
			arms[a.Arm] = a
		}
		return arms, nil
	}
	b, err := os.ReadFile(filepath.Join(f, "verdict.json"))
	if err != nil {
		return nil, fmt.Errorf("%s: neither compare.json nor verdict.json: %w", f, err)
	}
	var v results.Verdict
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	arms[""] = results.NewArmResult("", "", &v, ".")
	return arms, nil
}

// render returns the Markdown of the reports' table from res, measured
// on day, and whether every run matched its expectation with every trial
// conclusive.
func render(res outcomes, day time.Time) (string, bool) {
	var b strings.Builder
	ok := true
	trials := 0
	for _, arms := range res {
		for _, o := range arms {
			trials = max(trials, o.Trials)
		}
	}
	fmt.Fprintf(&b, "Measured %s with `make reproducers`: %d trials an arm, one at a time.\n\n", day.Format("2006-01-02"), trials)
	b.WriteString("| report | what users saw | scenario (arm) | version | expect | observed | unsafe, stuck or starving / conclusive | inconclusive |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range reports {
		if len(r.Runs) == 0 {
			continue
		}
		for i, u := range r.Runs {
			rep, saw := "", ""
			if i == 0 {
				rep, saw = fmt.Sprintf("[%s](%s)", r.ID, r.URL), r.Saw
			}
			name := "`" + u.Scenario + "`"
			if u.Arm != "" {
				name = "`" + u.Scenario + ":" + u.Arm + "`"
			}
			o, found := res[u.Scenario][u.Arm]
			if !found {
				ok = false
				fmt.Fprintf(&b, "| %s | %s | %s | %s | not run | | | |\n", rep, saw, name, u.Version)
				continue
			}
			observed := o.Observed
			if !o.Matched {
				observed = "**" + observed + "** (not matched)"
			}
			if !o.Matched || o.Inconclusive > 0 {
				ok = false
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d/%d | %d |\n",
				rep, saw, name, u.Version, o.Expect, observed, o.Violations, o.Conclusive, o.Inconclusive)
		}
	}
	b.WriteString("\nNot reproduced:\n\n| report | what users saw | why not |\n|---|---|---|\n")
	for _, r := range reports {
		if len(r.Runs) == 0 {
			fmt.Fprintf(&b, "| [%s](%s) | %s | %s |\n", r.ID, r.URL, r.Saw, r.Reason)
		}
	}
	return b.String(), ok
}
