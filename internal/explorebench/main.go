// Command explorebench compares explore's search strategies: for each
// scenario and seed it runs the search (explore.Search: no shrink) once
// guided and once random, the two in turn so that a machine whose speed
// drifts slows both alike, and prints, per scenario, the median time and
// schedules to the first finding and the ratio random/guided. A search
// that found nothing within the budget counts as the budget (and is
// shown with a ">").
//
//	go run ./internal/explorebench -seeds 5 -budget 3m [-keep results/explorebench]
//
// With -keep, every search's trials (schedules, changes, scores) are kept
// as JSON, so a guided search's pool can be read afterwards.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/explore"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// A bench is one search to compare: a catalogue scenario, a fault
// vocabulary, and optionally a lock program in place of its lock.
type bench struct {
	name     string
	scenario string
	faults   []string
	program  []string // a lock program's command line, relative to the module root
	// attack is the fault kind of the scenario's own attack, "" if none
	// alone: a search that learns from its trials cannot aim it before it
	// has drawn it once, so the random search's first draw of it (printed
	// beside the times) is how soon either strategy could find the attack
	// without a prior for it.
	attack string
}

var benches = []bench{
	{name: "redlock-baseline", scenario: "redlock-baseline",
		faults: []string{"kill", "restart", "pause", "partition", "latency", "drop-replies", "reset"}},
	{name: "single-baseline (bare DEL)", scenario: "single-baseline",
		faults: []string{"pause-client", "latency", "drop-replies"}, program: []string{"bin/extlock", "-unsafe-release"}},
	{name: "etcd-pause-holder (unfenced)", scenario: "etcd-pause-holder",
		faults: []string{"pause-client", "latency", "partition"}},
	// a lock that renews its lease (Redisson's watchdog), client-side faults
	// only: the attack is a holder frozen or cut off past its lease
	{name: "watchdog-pause (client faults)", scenario: "watchdog-pause",
		faults: []string{"pause-client", "latency", "partition", "drop-replies", "reset"}, attack: "pause-client"},
	// a single master and SET NX PX, client-side faults only: the attack is
	// the holder frozen past its lease, then writing
	{name: "gc-pause (client faults)", scenario: "gc-pause",
		faults: []string{"pause-client", "latency", "partition", "drop-replies", "reset"}, attack: "pause-client"},
	// Redlock on five masters, client-side faults only: no node fault to
	// break it, the attack is the holder frozen past its lease
	{name: "redlock-gc-pause (client faults)", scenario: "redlock-gc-pause",
		faults: []string{"pause-client", "latency", "partition", "drop-replies", "reset"}, attack: "pause-client"},
	// every fault that fits: a larger space, where the first finding takes
	// tens of schedules
	{name: "failover-lock-loss (every fault)", scenario: "failover-lock-loss"},
	{name: "etcd-pause-holder (every fault)", scenario: "etcd-pause-holder", attack: "pause-client"},
	{name: "zk-pause-holder (every fault)", scenario: "zk-pause-holder", attack: "pause-client"},
	{name: "redlock-gc-pause (every fault)", scenario: "redlock-gc-pause", attack: "pause-client"},
	{name: "etcd-partition-holder (every fault)", scenario: "etcd-partition-holder"},
	{name: "watchdog-pause (every fault)", scenario: "watchdog-pause"},
	// the holder alone cut off from the master past its lease: a
	// partition of one client's link, at the right time, for long enough
	{name: "partition-holder (every fault)", scenario: "partition-holder"},
	{name: "pg-holder-cut (every fault)", scenario: "pg-holder-cut"},
	{name: "etcd-waiter-lease-expiry (every fault)", scenario: "etcd-waiter-lease-expiry", attack: "pause-client"},
}

// A run is one search's outcome.
type run struct {
	found     bool
	seconds   float64
	schedules int
}

func main() {
	if trial.IsWorker() { // an isolated client of a trial this program runs
		if err := trial.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "explorebench worker:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	seeds := flag.Int("seeds", 5, "seeds per scenario and strategy")
	first := flag.Int("first-seed", 1, "the first seed; the others follow it")
	budget := flag.Duration("budget", 3*time.Minute, "time budget of one search")
	parallel := flag.Int("parallel", 2, "trials of a search at once")
	only := flag.String("only", "", "run only the benches whose names have one of these words (comma-separated) at the start or after a space")
	keep := flag.String("keep", "", "write each search's trials (schedules, changes, scores) to this folder, one JSON file a search")
	flag.Parse()
	var kept *results.RunDir // where searches are kept, nil if not
	if *keep != "" {
		kept = results.Existing(*keep)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer cluster.KillAll()
	trial.SilenceRedisLogs()
	if err := exec.Command("go", "build", "-o", "bin/extlock", "./examples/extlock").Run(); err != nil {
		fmt.Fprintln(os.Stderr, "explorebench: build examples/extlock:", err)
		os.Exit(3)
	}
	fmt.Printf("explore: time to the first finding, guided against random; %d seeds, budget %v, parallel %d\n", *seeds, *budget, *parallel)
	fmt.Printf("%-30s %-8s %s\n", "scenario", "strategy", "per seed: seconds (schedules)")
	var summary []string
	for _, b := range benches {
		if !b.chosen(*only) {
			continue
		}
		base, err := b.load()
		if err != nil {
			fmt.Fprintln(os.Stderr, "explorebench:", err)
			os.Exit(2)
		}
		runs := map[string][]run{}
		var draws []int // the random search's first draw of the attack, per seed
		for seed := *first; seed < *first+*seeds; seed++ {
			if d := b.firstDraw(base, uint64(seed)); d > 0 {
				draws = append(draws, d)
				fmt.Fprintf(os.Stderr, "explorebench: %s, seed %d: random draws %s first at schedule %d\n", b.name, seed, b.attack, d)
			}
			order := explore.Strategies()
			if seed%2 == 0 {
				slices.Reverse(order)
			}
			for _, strategy := range order {
				r, err := search(ctx, base, b.faults, strategy, uint64(seed), *budget, *parallel, kept, keptAs(b.name, strategy, seed))
				if err != nil {
					fmt.Fprintf(os.Stderr, "explorebench: %s %s seed %d: %v\n", b.name, strategy, seed, err)
					os.Exit(3)
				}
				runs[strategy] = append(runs[strategy], r)
				fmt.Fprintf(os.Stderr, "explorebench: %s, %s, seed %d: %s\n", b.name, strategy, seed, cells([]run{r}))
			}
		}
		for _, strategy := range explore.Strategies() {
			fmt.Printf("%-30s %-8s %s\n", b.name, strategy, cells(runs[strategy]))
		}
		if len(draws) > 0 {
			fmt.Printf("%-30s %-8s %s\n", b.name, "1st "+b.attack, listed(draws))
		}
		g, r := median(runs[explore.StrategyGuided], *budget), median(runs[explore.StrategyRandom], *budget)
		summary = append(summary, fmt.Sprintf("%-30s %8s %8s %6.2f   %s of %d found guided, %s random",
			b.name, g, r, r.seconds/max(g.seconds, 0.1), count(runs[explore.StrategyGuided]), *seeds, count(runs[explore.StrategyRandom])))
	}
	fmt.Printf("\n%-30s %8s %8s %6s\n", "median time to a finding", "guided", "random", "random/guided")
	for _, line := range summary {
		fmt.Println(line)
	}
}

// firstDraw returns the number (from 1) of the random search's first
// schedule, with seed, that draws the bench's attack, within 100; 0 if
// none does or the bench names no attack.
func (b bench) firstDraw(base scenario.Scenario, seed uint64) int {
	if b.attack == "" {
		return 0
	}
	gen, err := explore.NewGenerator(base, b.faults)
	if err != nil {
		return 0
	}
	for i := range 100 {
		if slices.ContainsFunc(gen.Schedule(seed, i).Faults, func(st scenario.Step) bool { return st.Fault == b.attack }) {
			return i + 1
		}
	}
	return 0
}

// listed lists schedule numbers, and their median.
func listed(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprint(n)
	}
	sorted := slices.Sorted(slices.Values(ns))
	return fmt.Sprintf("schedule %s (median %d)", strings.Join(out, ", "), sorted[len(sorted)/2])
}

// chosen reports whether only, a comma-separated list of words, names b
// (or is empty).
func (b bench) chosen(only string) bool {
	if only == "" {
		return true
	}
	for w := range strings.SplitSeq(only, ",") {
		if w != "" && (strings.HasPrefix(b.name, w) || strings.Contains(b.name, " "+w)) {
			return true
		}
	}
	return false
}

// load returns the bench's scenario, with its lock program if it has one.
func (b bench) load() (scenario.Scenario, error) {
	s, err := scenario.Lookup(b.scenario)
	if err != nil || len(b.program) == 0 {
		return s, err
	}
	cmd := slices.Clone(b.program)
	if cmd[0], err = filepath.Abs(cmd[0]); err != nil {
		return s, err
	}
	return s.WithSubject("external", cmd)
}

// keptAs names the file a search's trials are kept in, under -keep.
func keptAs(bench, strategy string, seed int) string {
	name := strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(bench)
	return fmt.Sprintf("%s.%s.seed%d.json", name, strategy, seed)
}

// search runs one search and returns when it first found something; with
// kept, it writes the search's result (every trial, its schedule, change
// and score) there, as keep.
func search(ctx context.Context, base scenario.Scenario, faults []string, strategy string, seed uint64, budget time.Duration, parallel int, kept *results.RunDir, keep string) (run, error) {
	res, err := explore.Search(ctx, base, explore.Options{Faults: faults, Strategy: strategy, Seed: seed, Budget: budget, Parallel: parallel})
	if err != nil && !errors.Is(err, explore.ErrFoundNothing) {
		return run{}, err
	}
	if kept != nil {
		if err := kept.WriteJSON(keep, res); err != nil {
			return run{}, err
		}
	}
	r := run{found: res.FirstFindingSeconds > 0, seconds: res.FirstFindingSeconds, schedules: len(res.Trials)}
	if !r.found {
		r.seconds = budget.Seconds()
	}
	return r, nil
}

func cells(rs []run) string {
	var out []string
	for _, r := range rs {
		mark := ""
		if !r.found {
			mark = ">"
		}
		out = append(out, fmt.Sprintf("%s%.0f (%d)", mark, r.seconds, r.schedules))
	}
	return strings.Join(out, "  ")
}

// A med is a median time, censored when more than half found nothing.
type med struct {
	seconds  float64
	censored bool
}

func (m med) String() string {
	if m.censored {
		return fmt.Sprintf(">%.0f s", m.seconds)
	}
	return fmt.Sprintf("%.0f s", m.seconds)
}

// median returns the median time to a finding; a search that found nothing
// counts as the budget.
func median(rs []run, budget time.Duration) med {
	ts := make([]float64, len(rs))
	for i, r := range rs {
		ts[i] = r.seconds
	}
	slices.Sort(ts)
	n := len(ts)
	if n == 0 {
		return med{}
	}
	m := ts[n/2]
	if n%2 == 0 {
		m = (ts[n/2-1] + ts[n/2]) / 2
	}
	return med{seconds: m, censored: m >= budget.Seconds()}
}

func count(rs []run) string {
	n := 0
	for _, r := range rs {
		if r.found {
			n++
		}
	}
	return fmt.Sprint(n)
}
