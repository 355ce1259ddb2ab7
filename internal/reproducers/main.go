// Command reproducers runs the scenarios that reproduce reported lock bugs
// (the reproducers suite, and the scenario files of lock programs built
// first) and rewrites the table of docs/reproducers.md from their verdicts:
//
//	go run ./internal/reproducers -lockpick bin/lockpick -trials 20 -doc docs/reproducers.md
//
// Each scenario runs on its own, one trial at a time: `lockpick compare`
// for one with arms, `lockpick run` for one without, each into a folder of
// its own under -out. With -from, nothing runs: the table is made from the
// folders of an earlier run. It exits 1 when an arm did not match its
// expectation or a trial was inconclusive (the table says which), 3 when a
// run produced no verdict, 2 on bad usage.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Markers of the generated part of docs/reproducers.md.
const (
	beginMarker = "<!-- reproducers-table: begin (make reproducers) -->"
	endMarker   = "<!-- reproducers-table: end -->"
)

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reproducers:", err)
	}
	os.Exit(code)
}

func run() (int, error) {
	var (
		lockpick = flag.String("lockpick", "bin/lockpick", "the lockpick binary")
		trials   = flag.Int("trials", 20, "trials an arm")
		out      = flag.String("out", "", "folder for the runs (default results/reproducers/<UTC time>)")
		from     = flag.String("from", "", "make the table from this earlier -out folder; run nothing")
		doc      = flag.String("doc", "docs/reproducers.md", "the page whose table is rewritten")
	)
	flag.Parse()
	if flag.NArg() > 0 || *trials < 1 {
		flag.Usage()
		return 2, nil
	}
	dir, n := *from, *trials
	if dir == "" {
		dir = *out
		if dir == "" {
			dir = filepath.Join("results", "reproducers", time.Now().UTC().Format("20060102-150405"))
		}
		if err := runAll(*lockpick, dir, n); err != nil {
			return 3, err
		}
	}
	res, err := readResults(dir)
	if err != nil {
		return 3, err
	}
	table, ok := render(res, time.Now().UTC())
	if err := rewrite(*doc, table); err != nil {
		return 3, err
	}
	fmt.Fprintf(os.Stderr, "%s: reproducers table updated from %s\n", *doc, dir)
	if !ok {
		return 1, errors.New("an arm did not match its expectation, or a trial was inconclusive: see the table")
	}
	return 0, nil
}

// scenarios returns each scenario the reports run, once, in their order.
func scenarios() []measure {
	var out []measure
	seen := map[string]bool{}
	for _, r := range reports {
		for _, u := range r.Runs {
			if !seen[u.Scenario] {
				seen[u.Scenario] = true
				out = append(out, u)
			}
		}
	}
	return out
}

// runAll runs every scenario of the reports into dir/<scenario>, trials
// an arm, one trial at a time. An exit of 1 (a verdict that did not match)
// is the table's to show; any other failure stops it.
func runAll(lockpick, dir string, trials int) error {
	for _, u := range scenarios() {
		sub := filepath.Join(dir, u.Scenario)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		cmd := "run"
		if u.Arm != "" {
			cmd = "compare"
		}
		args := []string{cmd}
		if u.File != "" {
			args = append(args, "--file", u.File)
		} else {
			args = append(args, u.Scenario)
		}
		args = append(args, "--trials", fmt.Sprint(trials), "--parallel", "1", "--out", sub)
		var log bytes.Buffer
		c := exec.Command(lockpick, args...)
		c.Stdout, c.Stderr = &log, &log
		fmt.Fprintf(os.Stderr, "== %s %s\n", lockpick, strings.Join(args, " "))
		err := c.Run()
		if werr := os.WriteFile(sub+".log", log.Bytes(), 0o644); werr != nil {
			return werr
		}
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			return fmt.Errorf("%s %s: %w\n%s", lockpick, strings.Join(args, " "), err, log.String())
		}
	}
	return nil
}

// rewrite replaces the lines between the markers of the page at path with
// table.
func rewrite(path, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	page, err := replaceBetween(string(b), table)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(page), 0o644)
}

// replaceBetween returns page with the text between its markers replaced
// by table.
func replaceBetween(page, table string) (string, error) {
	i := strings.Index(page, beginMarker)
	j := strings.Index(page, endMarker)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s ... %s", beginMarker, endMarker)
	}
	head := page[:i+len(beginMarker)]
	return head + "\n" + strings.TrimSuffix(table, "\n") + "\n" + page[j:], nil
}
