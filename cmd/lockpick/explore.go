package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/explore"
	"github.com/lockpick/lockpick/scenario"
)

type exploreFlags struct {
	file      string
	subject   string
	subjCmd   string
	shape     string // --subject-shape
	caps      string // --subject-caps
	faults    string
	budget    string
	seed      uint64
	parallel  int
	replayPar int
	out       string
	findings  int
	reproduce string
	measure   int
	replays   int
	backend   string
	strategy  string
	quiet     bool
	shard     shardFlags
}

func newExploreCmd() *cobra.Command {
	var f exploreFlags
	cmd := &cobra.Command{
		Use:   "explore [SCENARIO] [--file F] [--faults kill,pause,...] [--budget 10m|500]",
		Short: "Search random fault schedules for one that breaks the lock, and shrink it to a scenario",
		Long: `Explore takes a scenario's topology, lock and clients, ignores its scripted
faults, and plays random fault schedules drawn from a vocabulary (every fault
lockpick has, aimed at nodes by name or by the system's state: the current
master, a node holding the lock's key, the holder's client), with durations,
offsets and delays scaled to the lock's TTL, until a trial is unsafe or the
budget runs out. Only an unsafe trial is a finding: a stuck lock is
liveness, and an inconclusive trial (a fault without effect, a dead worker)
proves nothing and is listed with its reason.

A finding is shrunk: faults dropped, shortened, moved earlier and
simplified, clients, trial time and hold time reduced, each change kept
only while --reproduce K/N replays still break the lock (each change is
decided as soon as that is certain, --replay-parallel replays side by
side). The result is
written as minimal.yaml, an ordinary scenario file (expect: unsafe, an
explain generated from the faults and the anomaly), measured with --measure
replays in a run of its own; with the original schedule, its history, the
shrink steps and report.html, in results/explore/<time>-<scenario>-seed<S>/.

By default the search is guided: after a few random schedules, most are
changes (a fault moved, stretched, aimed elsewhere, added or dropped) of the
schedules whose trials came closest to breaking the lock: the shortest
handover between two holders, a holder acting after its lease was gone, a
stale write a fence refused. --strategy random draws every schedule afresh.

Under --strategy random the same --seed plays the same schedules; a guided
search also follows what its trials showed. See docs/explore.md.

Exit codes: 0 no finding within the budget, 1 a finding (or a search in
which every trial was inconclusive), 2 bad usage, 3 the harness failed.`,
		Example: "  lockpick explore redlock-baseline --budget 10m --parallel 2\n" +
			"  lockpick explore failover-lock-loss --faults kill,cut-replication,pause,partition --seed 7\n" +
			"  lockpick explore gc-pause-fenced --faults pause-client,latency,partition,drop-replies --budget 5m\n" +
			"  lockpick explore single-baseline --subject-cmd 'bin/extlock -unsafe-release' --budget 200",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplore(cmd.Context(), cmd.OutOrStdout(), args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "explore the scenario in this YAML file (its explore: section sets the vocabulary)")
	addSubjectFlags(cmd, &f.subject, &f.subjCmd, &f.shape, &f.caps, "the search instead of the scenario's own: redislock, redsync, ...")
	fl.StringVar(&f.faults, "faults", "", "the fault vocabulary, comma-separated (default: every fault that fits the topology): "+strings.Join(explore.Kinds(), ","))
	fl.StringVar(&f.budget, "budget", "5m", "how long to search: a duration (10m) or a number of trials (500)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the search: the same seed plays the same schedules (under --strategy random)")
	fl.StringVar(&f.strategy, "strategy", explore.StrategyGuided, "how schedules are drawn: "+strings.Join(explore.Strategies(), " or ")+" (guided: around those that came closest to breaking the lock)")
	fl.IntVarP(&f.parallel, "parallel", "p", 0, fmt.Sprintf("search trials to run at once, each with its own nodes and ports (default: 2 per CPU, here %d)", explore.DefaultReplayParallel()))
	fl.IntVar(&f.replayPar, "replay-parallel", 0, fmt.Sprintf("shrink and measurement replays to run at once (default: 2 per CPU, here %d)", explore.DefaultReplayParallel()))
	fl.StringVar(&f.out, "out", "results/explore", "folder to create the explore folder in")
	fl.IntVar(&f.findings, "findings", 1, "stop after this many findings (minimal.yaml, minimal-2.yaml, ...)")
	fl.StringVar(&f.reproduce, "reproduce", "4/5", "keep a shrink step when K of N replays still break the lock")
	fl.IntVar(&f.measure, "measure", 10, "replays that measure the minimal scenario's reproduction rate")
	fl.IntVar(&f.replays, "shrink-replays", 150, "most replays one shrink may spend")
	fl.StringVar(&f.backend, "backend", "process", "where Redis runs: process or docker")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress line")
	addShardFlags(cmd, &f.shard, "seed's schedules, e.g. 2/4: each shard searches its own, in an explore folder of its own")
	return cmd
}

func runExplore(ctx context.Context, out io.Writer, args []string, f exploreFlags) error {
	if (len(args) == 0) == (f.file == "") {
		return usageError("explore: name one scenario (see `lockpick list`) or pass --file")
	}
	if f.parallel < 0 || f.findings < 1 || f.measure < 1 || f.replayPar < 0 {
		return usageError("explore: --findings and --measure must be at least 1, --parallel and --replay-parallel at least 0 (the default)")
	}
	o := explore.Options{Seed: f.seed, Strategy: f.strategy, Parallel: f.parallel, Out: f.out, Findings: f.findings, Measure: f.measure}
	var err error
	if o.Shard, err = f.shard.resolve(); err != nil {
		return usageError("explore: " + err.Error())
	}
	if n, err := strconv.Atoi(f.budget); err == nil && n > 0 {
		o.MaxTrials = n
	} else if d, err := time.ParseDuration(f.budget); err == nil && d > 0 {
		o.Budget = d
	} else {
		return usageError(fmt.Sprintf("explore: --budget %q: want a duration (10m) or a number of trials (500)", f.budget))
	}
	k, n, ok := strings.Cut(f.reproduce, "/")
	o.Shrink.K, _ = strconv.Atoi(k)
	o.Shrink.N, _ = strconv.Atoi(n)
	if !ok || o.Shrink.K < 1 || o.Shrink.N < o.Shrink.K {
		return usageError(fmt.Sprintf("explore: --reproduce %q: want K/N with 1 <= K <= N, e.g. 4/5", f.reproduce))
	}
	o.Shrink.MaxReplays = f.replays
	o.Shrink.Parallel = f.replayPar
	if f.faults != "" {
		o.Faults = strings.Split(f.faults, ",")
	}
	var s scenario.Scenario
	if f.file != "" {
		s, err = scenario.LoadFile(f.file)
	} else {
		s, err = scenario.Lookup(args[0])
	}
	if err != nil {
		return usageError(err.Error())
	}
	list, skipped, err := applySubjectSpec([]scenario.Scenario{s}, subjectSpec{f.subject, f.subjCmd, f.shape, f.caps})
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		return usageError(fmt.Sprintf("explore: %s: %s: %s", subjectFlag(f.subjCmd), skipped[0].Scenario, skipped[0].Skipped))
	}
	s = list[0]
	printDropped(out, list)
	if o.Backend, err = backendFactory(f.backend, ""); err != nil {
		return usageError("explore: " + err.Error())
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer cluster.KillAll()

	line := newProgressLine(os.Stderr, s.Name, f.quiet)
	o.Progress = line.show
	res, err := explore.Explore(ctx, s, o)
	line.done()
	switch {
	case ctx.Err() != nil:
		return &exitError{code: 130, err: errors.New("interrupted; every node was stopped and no explore folder was kept")}
	case errors.Is(err, scenario.ErrBadScenario):
		return usageError(err.Error())
	case err != nil && !errors.Is(err, explore.ErrFoundNothing):
		return infraError(err)
	}
	printExplore(out, res)
	if n := len(res.Findings) + len(res.Flaky); n > 0 {
		return mismatch("%s: %d finding(s): the lock broke under a random schedule", s.Name, n)
	}
	if conclusive := len(res.Trials) - sum(res.Inconclusive); conclusive == 0 {
		return mismatch("%s: every one of %d trials was inconclusive: the search proved nothing", s.Name, len(res.Trials))
	}
	return nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func printExplore(w io.Writer, r *explore.Result) {
	strategy := r.Strategy + " search"
	if r.Strategy == explore.StrategyGuided {
		strategy += fmt.Sprintf(" (%d changes of closer schedules)", r.Changed)
	}
	fmt.Fprintf(w, "explore %s: %d schedules in %.0f s (%.1f schedules/min), seed %d, %s, vocabulary %s\n",
		r.Scenario, len(r.Trials), r.SearchSeconds, r.PerMinute, r.Seed, strategy, strings.Join(r.Vocabulary, ","))
	fmt.Fprintf(w, "  %d finding(s), %d flaky, %d stuck and %d starving (liveness, not findings), %d inconclusive\n",
		len(r.Findings), len(r.Flaky), r.Stuck, r.Starves, sum(r.Inconclusive))
	if r.FirstFindingSeconds > 0 {
		fmt.Fprintf(w, "  first finding after %.0f s", r.FirstFindingSeconds)
		if r.MinimalSeconds > 0 {
			fmt.Fprintf(w, ", minimal.yaml after %.0f s (replays %d at a time)", r.MinimalSeconds, r.ReplayParallel)
		}
		fmt.Fprintln(w)
	}
	for reason, n := range r.Inconclusive {
		fmt.Fprintf(w, "  %d inconclusive: %s\n", n, wrap(reason, 96, "    "))
	}
	prevented, in := map[string]int{}, map[string]int{}
	for _, t := range r.Trials {
		for k, n := range t.Prevented {
			prevented[k] += n
			in[k]++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(prevented)) {
		fmt.Fprintf(w, "  %d %s prevented (refused by the mitigation) in %d of %d trials\n", prevented[k], k, in[k], len(r.Trials))
	}
	for _, fd := range r.Flaky {
		seen := ""
		if len(fd.Shrunk.Steps) > 0 {
			seen = fmt.Sprintf("broke the lock %d of %d replays, ", fd.Shrunk.Steps[0].Reproduced, fd.Shrunk.Steps[0].Replays)
		}
		fmt.Fprintf(w, "  %s: %s seen once, flaky (%s%d of %d needed), not shrunk: %s\n    %s\n",
			fd.File, fd.Kind, seen, fd.Shrunk.K, fd.Shrunk.N, wrap(fd.Original.Describe(), 96, "      "), wrap(fd.Anomaly, 96, "      "))
	}
	for _, fd := range r.Findings {
		fmt.Fprintf(w, "  %s: %s — shrunk from %d faults to %d in %d replays (%.0f s, kept at %d of %d), reproduced %s\n",
			fd.File, fd.Kind, len(fd.Original.Faults), len(fd.Minimal), fd.Shrunk.Replays, fd.Shrunk.Seconds, fd.Shrunk.K, fd.Shrunk.N, fd.Rate())
		if fd.Shrunk.Cancelled > 0 {
			fmt.Fprintf(w, "    (%d more replays were cancelled once their step was decided)\n", fd.Shrunk.Cancelled)
		}
		fmt.Fprintf(w, "    original: %s\n", wrap(fd.Original.Describe(), 96, "      "))
		fmt.Fprintf(w, "    minimal:  %s\n", wrap(scenario.Scenario{Faults: fd.Minimal}.Schedule(), 96, "      "))
		fmt.Fprintf(w, "    %s\n", wrap(fd.Anomaly, 96, "      "))
	}
	fmt.Fprintf(w, "  results: %s\n", r.Dir)
}

// A progressLine shows where an exploration stands: rewritten in place on
// a terminal, a line every 30 s otherwise.
type progressLine struct {
	w     io.Writer
	name  string
	quiet bool
	tty   bool

	mu   sync.Mutex
	last time.Time
	text string
}

func newProgressLine(w *os.File, name string, quiet bool) *progressLine {
	return &progressLine{w: w, name: name, quiet: quiet, tty: isTerminal(w)}
}

func (p *progressLine) show(pr explore.Progress) {
	if p.quiet {
		return
	}
	text := fmt.Sprintf("explore %s: %s · %d trials · %.1f schedules/min · %d unsafe · %d stuck · %d starving · %d inconclusive",
		p.name, pr.Phase, pr.Trials, pr.PerMinute, pr.Unsafe, pr.Stuck, pr.Starves, pr.Inconclusive)
	if pr.Replays > 0 {
		text += fmt.Sprintf(" · %d replays", pr.Replays)
	}
	if pr.Best != "" {
		text += " · best: " + pr.Best
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text = text
	switch {
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K%s", truncate(text, 160))
	case time.Since(p.last) >= 30*time.Second:
		fmt.Fprintln(p.w, text)
		p.last = time.Now()
	}
}

func (p *progressLine) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && !p.quiet && p.text != "" {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
