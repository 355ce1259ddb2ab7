// Command loadcheck runs a scenario suite under CPU load and says whether its
// verdicts held: the wrong scenario verdicts, the trials that missed their
// attack while counted conclusive, and the share of conclusive trials.
//
//	go run ./internal/loadcheck -lockpick bin/lockpick -suite ci -trials 3 -rounds 2 -busy 2
//
// A busy loop is a goroutine spinning on its own OS thread; they end with the
// command, so an interrupted check leaves nothing running. A trial "missed
// its attack" when it is conclusive and observed something other than what
// its scenario expects (a reply-loss trial observed safe where stuck is
// expected): with every attack proved by its evidence, that should never
// happen. It exits 1 on any wrong verdict or missed attack, 3 when a run
// fails to produce its verdicts.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"sync/atomic"
	"syscall"
	"time"
)

// verdict is the part of a run folder's verdict.json this command reads.
type verdict struct {
	Scenario string `json:"scenario"`
	Expect   string `json:"expect"`
	Observed string `json:"observed"`
	Matched  bool   `json:"matched"`
	Trials   []struct {
		Trial    int    `json:"trial"`
		Observed string `json:"observed"`
		Reason   string `json:"reason"`
	} `json:"trial_results"`
}

// tally sums up the verdicts of every round.
type tally struct {
	scenarios, trials, conclusive int
	wrong, missed, inconclusive   []string // one line each
	roundTimes                    []string
}

func main() {
	bin := flag.String("lockpick", "bin/lockpick", "the lockpick binary to run")
	suite := flag.String("suite", "ci", "the suite to run")
	trials := flag.Int("trials", 3, "trials per scenario")
	rounds := flag.Int("rounds", 2, "how many times to run the suite")
	busy := flag.Int("busy", 2, "busy loops beside the runs")
	out := flag.String("out", "", "folder for the run folders (default: a fresh temporary folder, removed at the end)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, *bin, *suite, *trials, *rounds, *busy, *out))
}

func run(ctx context.Context, bin, suite string, trials, rounds, busy int, out string) int {
	if out == "" {
		dir, err := os.MkdirTemp("", "lockpick-loadcheck-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadcheck:", err)
			return 3
		}
		defer os.RemoveAll(dir)
		out = dir
	}
	var spinning atomic.Bool
	spinning.Store(true)
	defer spinning.Store(false)
	for range busy {
		go spin(&spinning)
	}
	var t tally
	for r := 1; r <= rounds; r++ {
		dir := filepath.Join(out, fmt.Sprintf("round-%d", r))
		start := time.Now()
		cmd := exec.CommandContext(ctx, bin, "run", "--suite", suite, "--trials", fmt.Sprint(trials), "--quiet", "--out", dir)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "loadcheck: interrupted")
			return 130
		}
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
			fmt.Fprintf(os.Stderr, "loadcheck: round %d: %v\n", r, err)
			return 3
		}
		if err := t.add(dir, r); err != nil {
			fmt.Fprintln(os.Stderr, "loadcheck:", err)
			return 3
		}
		t.roundTimes = append(t.roundTimes, time.Since(start).Round(time.Second).String())
	}
	t.print(suite, trials, rounds, busy)
	if len(t.wrong) > 0 || len(t.missed) > 0 {
		return 1
	}
	return 0
}

// spin keeps one CPU busy until on is false.
func spin(on *atomic.Bool) {
	runtime.LockOSThread()
	for n := 0; on.Load(); n++ {
	}
}

// add reads the verdicts of one round's run folders.
func (t *tally) add(dir string, round int) error {
	files, err := filepath.Glob(filepath.Join(dir, "*", "verdict.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("round %d wrote no verdict.json under %s", round, dir)
	}
	sort.Strings(files)
	for _, f := range files {
		var v verdict
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		t.scenarios++
		if !v.Matched {
			t.wrong = append(t.wrong, fmt.Sprintf("round %d %s: expect %s, observed %s", round, v.Scenario, v.Expect, v.Observed))
		}
		for _, tr := range v.Trials {
			t.trials++
			where := fmt.Sprintf("round %d %s trial %d", round, v.Scenario, tr.Trial)
			switch {
			case tr.Observed == "inconclusive":
				t.inconclusive = append(t.inconclusive, where+": "+tr.Reason)
			case tr.Observed != v.Expect:
				t.conclusive++
				t.missed = append(t.missed, fmt.Sprintf("%s: observed %s, expected %s, counted conclusive", where, tr.Observed, v.Expect))
			default:
				t.conclusive++
			}
		}
	}
	return nil
}

func (t *tally) print(suite string, trials, rounds, busy int) {
	fmt.Printf("\n== loadcheck: suite %s, %d trials, %d rounds beside %d busy loops (rounds took %v)\n",
		suite, trials, rounds, busy, t.roundTimes)
	fmt.Printf("wrong scenario verdicts: %d of %d\n", len(t.wrong), t.scenarios)
	for _, w := range t.wrong {
		fmt.Println("  " + w)
	}
	fmt.Printf("trials that missed their attack but were counted conclusive: %d\n", len(t.missed))
	for _, m := range t.missed {
		fmt.Println("  " + m)
	}
	share := 0.0
	if t.trials > 0 {
		share = 100 * float64(t.conclusive) / float64(t.trials)
	}
	fmt.Printf("conclusive trials: %d of %d (%.1f%%)\n", t.conclusive, t.trials, share)
	for _, i := range t.inconclusive {
		fmt.Println("  inconclusive: " + i)
	}
}
