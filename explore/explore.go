package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// Options configures [Explore]. Zero fields take their defaults.
type Options struct {
	// Faults is the vocabulary; default: the scenario's explore section,
	// else every fault that fits the topology.
	Faults []string
	// Seed makes the search: the same seed plays the same schedules under
	// the random strategy (a guided search also follows what its trials
	// showed). default: 1.
	Seed uint64
	// Strategy is how schedules are drawn: [StrategyGuided] (around the
	// ones that came closest to breaking the lock) or [StrategyRandom].
	// default: guided.
	Strategy string
	// Parallel is how many trials of the search run at once. default:
	// [DefaultReplayParallel].
	Parallel int
	// Budget bounds the search by time, MaxTrials by trials; with neither,
	// the search stops after 5 minutes. Shrinking is bounded apart.
	Budget    time.Duration
	MaxTrials int
	// Findings is how many findings to shrink before stopping. default: 1.
	Findings int
	// Shrink configures the shrinker; its Seed is set here. Its Parallel
	// also runs the measurement's replays; default: [DefaultReplayParallel].
	Shrink ShrinkOptions
	// Measure is how many replays measure each minimal scenario's
	// reproduction rate. default: 10.
	Measure int
	// Target is the reproduction rate a minimal scenario must reach; below
	// it the shrink steps back along its kept changes. default: 0.8.
	Target float64
	// Out is the folder the explore folder is created in. default: results/explore.
	Out string
	// Backend makes each trial's backend. default: [trial.ProcessBackend].
	Backend trial.BackendFactory
	// Progress, if set, is called as the work goes on.
	Progress func(Progress)
	// Shard, if set, searches only the schedules dealt to it (schedule j
	// goes to shard (j mod Count)+1), so n machines with one seed search n
	// disjoint parts of one schedule sequence. default: every schedule.
	Shard results.Shard

	searchOnly bool // see [Search]
}

// Progress is where an exploration stands.
type Progress struct {
	Phase        string  // search, shrink or measure
	Trials       int     // search trials done
	Unsafe       int     // findings so far
	Stuck        int     // trials that showed only a stuck lock
	Starves      int     // trials that showed only a starvation or livelock
	Inconclusive int     // trials that proved nothing
	PerMinute    float64 // schedules per minute
	Replays      int     // shrink and measure replays so far
	Best         string  // the smallest failing schedule so far, in words
}

// A Result is what an exploration found; it is also written as explore.json.
type Result struct {
	Scenario   string   `json:"scenario"`
	Seed       uint64   `json:"seed"`
	Strategy   string   `json:"strategy"`
	Vocabulary []string `json:"vocabulary"`
	Parallel   int      `json:"parallel"`
	// Budget is what bounded the search, e.g. "10m0s" or "500 trials".
	Budget string `json:"budget"`
	// Shard is "i/n" when this search played only shard i of n of the
	// seed's schedules.
	Shard  string  `json:"shard,omitempty"`
	Trials []Tried `json:"trials"`
	// Changed counts the schedules a guided search made as changes of
	// closer ones (the rest were drawn afresh).
	Changed  int       `json:"changed,omitempty"`
	Findings []Finding `json:"findings"`
	// Flaky are unsafe trials whose schedule did not break the lock K of N
	// times again: real violations, kept as flaky.yaml, not shrunk.
	Flaky []Finding `json:"flaky,omitempty"`
	// Inconclusive counts the trials that proved nothing, by reason.
	Inconclusive map[string]int `json:"inconclusive,omitempty"`
	// Exercised counts the search trials in which each fault fired, by
	// kind and target ("pause-client c1"): what the search really tried.
	Exercised map[string]int `json:"exercised,omitempty"`
	Stuck     int            `json:"stuck"`
	Starves   int            `json:"starves,omitempty"`
	// SearchSeconds is the search's wall time; PerMinute its schedules per minute.
	SearchSeconds float64 `json:"search_seconds"`
	PerMinute     float64 `json:"schedules_per_minute"`
	// ReplayParallel is how many replays of the shrink and measurement ran at once.
	ReplayParallel int `json:"replay_parallel"`
	// FirstFindingSeconds is the time from the start to the first unsafe
	// trial (flaky or not), MinimalSeconds to the first minimal scenario,
	// shrunk and measured; 0 when there was none.
	FirstFindingSeconds float64 `json:"first_finding_seconds,omitempty"`
	MinimalSeconds      float64 `json:"minimal_seconds,omitempty"`
	Dir                 string  `json:"-"`
}

// Rate says how often the minimal scenario reproduced, e.g. "8 of 10
// (95% CI 49–94%)".
func (fd Finding) Rate() string {
	return fmt.Sprintf("%d of %d (95%% CI %.0f–%.0f%%)", fd.Reproduced, fd.Measured, 100*fd.Interval[0], 100*fd.Interval[1])
}

// A Finding is one unsafe schedule, shrunk, with its measured replay rate.
type Finding struct {
	File     string          `json:"file"`     // minimal.yaml, minimal-2.yaml, ...
	Original Schedule        `json:"original"` // the schedule the search drew
	Kind     string          `json:"kind"`     // the anomaly kind reproduced, e.g. double-grant
	Anomaly  string          `json:"anomaly"`  // the original trial's anomaly, in words
	Shrunk   Shrunk          `json:"shrink"`
	Minimal  []scenario.Step `json:"minimal"`
	// Reproduced of Measured replays of the minimal scenario showed the anomaly.
	Reproduced int `json:"reproduced"`
	Measured   int `json:"measured"`
	// Interval is the 95% Wilson interval of the reproduction rate.
	Interval  [2]float64 `json:"reproduced_95ci"`
	ReplayDir string     `json:"replay_dir"` // the run folder of those replays
	// FoundSeconds is the time from the start of the exploration to this
	// finding; MinimalSeconds to its minimal scenario, shrunk and measured
	// (0 for a flaky finding).
	FoundSeconds   float64 `json:"found_seconds"`
	MinimalSeconds float64 `json:"minimal_seconds,omitempty"`

	originalTrial trial.TrialResult
	minimalTrial  *trial.TrialResult
	minimal       scenario.Scenario
}

// exercised counts, for each fault kind and target, the trials in which
// it fired (once a trial, however often).
func exercised(trials []Tried) map[string]int {
	out := map[string]int{}
	for _, t := range trials {
		for _, f := range slices.Compact(slices.Sorted(slices.Values(t.Exercised))) {
			out[f]++
		}
	}
	return out
}

// ErrFoundNothing is not an error of the harness: the budget ran out with no
// finding. [Explore] returns it with a complete Result.
var ErrFoundNothing = errors.New("explore: no finding within the budget")

// Explore searches base with random fault schedules, shrinks each finding
// and writes an explore folder (explore.json, minimal.yaml, original.yaml,
// report.html, replay run folders). It returns [ErrFoundNothing] when the
// budget ran out first, an *[trial.InfraError] when the harness failed.
func Explore(ctx context.Context, base scenario.Scenario, opt Options) (*Result, error) {
	o := opt.withDefaults()
	base, gen, err := prepare(base, o)
	if err != nil {
		return nil, err
	}
	dir, err := results.Create(o.Out, fmt.Sprintf("%s-%s-seed%d%s", time.Now().Format("20060102-150405"), base.Name, o.Seed, o.Shard.Suffix()))
	if err != nil {
		return nil, &trial.InfraError{Err: err}
	}
	res, err := explore(ctx, base, gen, o, dir)
	if err != nil && !errors.Is(err, ErrFoundNothing) {
		dir.Abort()
		return nil, err
	}
	if werr := write(dir, base, res); werr != nil {
		dir.Abort()
		return nil, &trial.InfraError{Err: werr}
	}
	final, cerr := dir.Commit()
	if cerr != nil {
		dir.Abort()
		return nil, &trial.InfraError{Err: cerr}
	}
	res.Dir = final
	return res, err
}

// Search runs only the search of [Explore]: it stops at the first unsafe
// trial, which it neither shrinks nor replays, and writes nothing. The
// Result's FirstFindingSeconds is 0 when the budget ran out first (and the
// error is then [ErrFoundNothing]). A benchmark compares strategies by it.
func Search(ctx context.Context, base scenario.Scenario, opt Options) (*Result, error) {
	o := opt.withDefaults()
	o.searchOnly = true
	base, gen, err := prepare(base, o)
	if err != nil {
		return nil, err
	}
	res, err := explore(ctx, base, gen, o, nil)
	if err == nil && res.FirstFindingSeconds == 0 {
		err = ErrFoundNothing
	}
	return res, err
}

// prepare returns base as explore plays it (no scripted faults or arms;
// with pause-client asked for, every client isolated) and its generator.
func prepare(base scenario.Scenario, o Options) (scenario.Scenario, *Generator, error) {
	base.Faults, base.Arms = nil, nil
	if slices.Contains(o.Faults, "pause-client") && len(base.Isolate) == 0 {
		// Asked for by name: every client runs as its own process, so any can be frozen.
		for p := 1; p <= base.Clients; p++ {
			base.Isolate = append(base.Isolate, p)
		}
	}
	if err := o.Shard.Validate(); err != nil {
		return base, nil, fmt.Errorf("%w: %v", scenario.ErrBadScenario, err)
	}
	if !slices.Contains(Strategies(), o.Strategy) {
		return base, nil, fmt.Errorf("%w: unknown search strategy %q (known: %s)", scenario.ErrBadScenario, o.Strategy, strings.Join(Strategies(), ", "))
	}
	gen, err := NewGenerator(base, o.Faults)
	return base, gen, err
}

func (o Options) withDefaults() Options {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Strategy == "" {
		o.Strategy = StrategyGuided
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultReplayParallel()
	}
	if o.Budget <= 0 && o.MaxTrials <= 0 {
		o.Budget = 5 * time.Minute
	}
	if o.Findings <= 0 {
		o.Findings = 1
	}
	if o.Measure <= 0 {
		o.Measure = 10
	}
	if o.Target <= 0 {
		o.Target = 0.8
	}
	if o.Out == "" {
		o.Out = filepath.Join("results", "explore")
	}
	if o.Backend == nil {
		o.Backend = trial.ProcessBackend
	}
	if o.Shrink.Parallel <= 0 {
		o.Shrink.Parallel = DefaultReplayParallel()
	}
	return o
}

// DefaultReplayParallel is how many trials of a search, and replays of a
// shrink, run at once unless told: two per CPU, since a trial mostly waits
// on its TTLs and holds (a redlock-baseline trial of 2.7 s takes about 0.6 s
// of CPU). A K-of-N step never has more than N in flight.
func DefaultReplayParallel() int { return 2 * runtime.NumCPU() }

func explore(ctx context.Context, base scenario.Scenario, gen *Generator, o Options, dir *results.RunDir) (*Result, error) {
	res := &Result{Scenario: base.Name, Seed: o.Seed, Strategy: o.Strategy, Vocabulary: gen.Kinds(), Parallel: o.Parallel, ReplayParallel: o.Shrink.Parallel,
		Inconclusive: map[string]int{}}
	if !o.Shard.Whole() {
		res.Shard = o.Shard.String()
	}
	switch {
	case o.MaxTrials > 0 && o.Budget > 0:
		res.Budget = fmt.Sprintf("%v or %d trials", o.Budget, o.MaxTrials)
	case o.MaxTrials > 0:
		res.Budget = fmt.Sprintf("%d trials", o.MaxTrials)
	default:
		res.Budget = o.Budget.String()
	}
	began := time.Now()
	p := Progress{Phase: "search"}
	var pmu sync.Mutex
	report := func(edit func(*Progress)) {
		pmu.Lock()
		defer pmu.Unlock()
		edit(&p)
		if mins := time.Since(began).Minutes(); mins > 0 && p.Phase == "search" {
			p.PerMinute = float64(p.Trials) / mins
		}
		if o.Progress != nil {
			o.Progress(p)
		}
	}
	sr := &searcher{base: base, gen: gen, seed: o.Seed, parallel: o.Parallel, maxTry: o.MaxTrials, backend: o.Backend, began: began, shard: o.Shard,
		strategy: o.Strategy, guide: &guide{stride: o.Shard.Count},
		progress: func(t Tried) {
			report(func(p *Progress) {
				p.Trials++
				switch t.Observed {
				case evidence.Unsafe:
					p.Unsafe++
				case evidence.Stuck:
					p.Stuck++
				case evidence.Starves:
					p.Starves++
				case evidence.Inconclusive:
					p.Inconclusive++
				}
			})
		}}
	if o.Budget > 0 {
		sr.deadline = began.Add(o.Budget)
	}
	if sr.strategy == StrategyGuided {
		sr.guide.cover = gen.covering(o.Seed)
	}
	var searchTime time.Duration
	next := 0
	var err error
	for len(res.Findings) < o.Findings {
		t0 := time.Now()
		var f *finding
		f, next, err = sr.search(ctx, next)
		searchTime += time.Since(t0)
		if err != nil || f == nil {
			break
		}
		found := time.Since(began).Seconds()
		if res.FirstFindingSeconds == 0 {
			res.FirstFindingSeconds = found
		}
		if o.searchOnly {
			break
		}
		report(func(p *Progress) { p.Phase, p.Best = "shrink", f.tried.Schedule.Describe() })
		var fd Finding
		fd, err = shrinkFinding(ctx, base, f, o, dir, len(res.Findings)+1, len(res.Flaky)+1, report)
		if err != nil {
			break
		}
		fd.FoundSeconds = found
		if fd.Shrunk.Confirmed {
			fd.MinimalSeconds = time.Since(began).Seconds()
			if res.MinimalSeconds == 0 {
				res.MinimalSeconds = fd.MinimalSeconds
			}
			res.Findings = append(res.Findings, fd)
		} else {
			// A real violation, but one the shrinker cannot work with:
			// keep it, and search on for one that reproduces.
			res.Flaky = append(res.Flaky, fd)
		}
		report(func(p *Progress) { p.Phase = "search" })
	}
	res.Trials = sr.log()
	res.SearchSeconds = searchTime.Seconds()
	if searchTime > 0 {
		res.PerMinute = float64(len(res.Trials)) / searchTime.Minutes()
	}
	res.Exercised = exercised(res.Trials)
	for _, t := range res.Trials {
		if t.Schedule.Change != "" {
			res.Changed++
		}
	}
	for _, t := range res.Trials {
		switch t.Observed {
		case evidence.Inconclusive:
			res.Inconclusive[t.Reason]++
		case evidence.Stuck:
			res.Stuck++
		case evidence.Starves:
			res.Starves++
		}
	}
	if err != nil && (len(res.Findings) == 0 || !errors.Is(err, context.DeadlineExceeded)) {
		return res, err
	}
	if len(res.Findings)+len(res.Flaky) == 0 {
		return res, ErrFoundNothing
	}
	return res, nil
}

// shrinkFinding shrinks f, measures the minimal scenario with a run of
// its own in dir, and returns the finding.
func shrinkFinding(ctx context.Context, base scenario.Scenario, f *finding, o Options, dir *results.RunDir, n, flaky int, report func(func(*Progress))) (Finding, error) {
	fd := Finding{File: "minimal.yaml", Original: f.tried.Schedule, Anomaly: f.tried.Example, originalTrial: f.trial}
	if n > 1 {
		fd.File = fmt.Sprintf("minimal-%d.yaml", n)
	}
	fd.Kind = f.kind
	original := f.tried.Schedule.Apply(base)
	original.Expect = scenario.Unsafe
	rp := &replayer{backend: o.Backend, kind: fd.Kind}
	so := o.Shrink
	so.Seed = f.tried.Schedule.Seed
	so.Progress = func(step ShrinkStep, best scenario.Scenario) {
		report(func(p *Progress) {
			p.Replays += step.Replays
			p.Best = fmt.Sprintf("%d faults: %s", len(best.Faults), best.Schedule())
		})
	}
	shrunk, err := Shrink(ctx, original, rp.replay, so)
	if err != nil {
		return fd, err
	}
	fd.Shrunk, fd.minimal = shrunk, shrunk.Minimal
	name := fmt.Sprintf("%s-explored-seed%d-%d", base.Name, o.Seed, f.tried.Schedule.Index)
	fd.minimal.Name = name
	if !shrunk.Confirmed {
		fd.File = "flaky.yaml"
		if flaky > 1 {
			fd.File = fmt.Sprintf("flaky-%d.yaml", flaky)
		}
		fd.Minimal = fd.minimal.Faults
		fd.minimal.Summary = fmt.Sprintf("seen once by lockpick explore on %s, not reproduced %d of %d times: %s → %s", base.Name, shrunk.K, shrunk.N, fd.minimal.Schedule(), fd.Kind)
		fd.minimal.Explain = explain(base, f, fd, o.Seed)
		return fd, nil
	}
	// K of N lets a change through that breaks the lock less often than
	// that; measure with a run like `lockpick run --file minimal.yaml
	// --trials N`, and step back along the kept changes until the rate is
	// met (see [stepBacks]).
	runName := strings.TrimSuffix(fd.File, ".yaml") + "-replay"
	var runDir string
	backs := stepBacks(shrunk.Chain, shrunk.wasRefused)
	for tries := 0; ; tries++ {
		fd.minimal.Name = name // a step back lands on a scenario of the chain, or one made from it: named like the base
		fd.minimal.Early = nil // measured as its file runs, to its whole duration
		fd.minimal.Faults = slices.Clone(fd.minimal.Faults)
		slices.SortStableFunc(fd.minimal.Faults, func(a, b scenario.Step) int { return int(a.At - b.At) })
		report(func(p *Progress) { p.Phase = "measure" })
		canStepBack := len(backs) > 0
		if tries > 0 && canStepBack {
			// A scenario stepped back to, with more left to step back to, is
			// checked first, stopping as soon as its rate is known.
			hits, misses, err := checkRate(ctx, fd.minimal, rp.replay, o, so.Seed+1_000_000+uint64(tries)*uint64(o.Measure))
			if err != nil {
				return fd, err
			}
			fd.Shrunk.Replays += hits + misses
			report(func(p *Progress) { p.Replays += hits + misses })
			if !reaches(o, hits, misses) {
				fd.Shrunk.Backoff = append(fd.Shrunk.Backoff, fmt.Sprintf("%d of %d with %d faults (stopped: %d of %d out of reach)",
					hits, hits+misses, len(fd.minimal.Faults), needed(o), o.Measure))
				fd.minimal, backs = backs[0], backs[1:]
				continue
			}
		}
		var v *results.Verdict
		v, runDir, err = trial.Run(ctx, fd.minimal, &trial.Options{Trials: o.Measure, Seed: 1, Out: dir.Path("."),
			Name: runName, Parallel: o.Shrink.Parallel, Backend: o.Backend})
		if err != nil {
			return fd, err
		}
		report(func(p *Progress) { p.Replays += o.Measure })
		fd.Reproduced = 0
		for _, t := range v.TrialResults {
			if t.Observed == evidence.Unsafe && t.Anomalies[fd.Kind] > 0 {
				fd.Reproduced++
			}
		}
		if fd.Reproduced >= needed(o) || !canStepBack {
			break
		}
		fd.Shrunk.Backoff = append(fd.Shrunk.Backoff, fmt.Sprintf("%d of %d with %d faults", fd.Reproduced, o.Measure, len(fd.minimal.Faults)))
		fd.Shrunk.Replays += o.Measure
		if err := os.RemoveAll(runDir); err != nil {
			return fd, &trial.InfraError{Err: err}
		}
		fd.minimal, backs = backs[0], backs[1:]
	}
	fd.Minimal = fd.minimal.Faults
	fd.Measured, fd.ReplayDir = o.Measure, filepath.Base(runDir)
	fd.Interval[0], fd.Interval[1] = results.Wilson(fd.Reproduced, fd.Measured)
	if h, err := checker.ReadFile(filepath.Join(runDir, "history.jsonl")); err == nil {
		tr := trial.TrialResult{History: h, Check: checker.Check(h, trial.CheckOptions(fd.minimal))}
		fd.minimalTrial = &tr
	}
	fd.minimal.Explain = explain(base, f, fd, o.Seed)
	fd.minimal.Summary = fmt.Sprintf("found by lockpick explore on %s: %s → %s", base.Name, fd.minimal.Schedule(), fd.Kind)
	return fd, nil
}

// maxStepBacks bounds the scenarios a measurement below the target steps
// back to; the last, the scenario the shrink started from, is always among
// them.
const maxStepBacks = 6

// stepBacks lists what a minimal scenario below the target rate steps back
// to, in order: scenarios that undo one of the kept changes (the scenario
// before it) or put back, into the minimal scenario, what one of them
// dropped (part of it first, as [chunks] deals it, then all: the changes
// after it stay), and last the scenario the shrink started from. Fewer
// faults go first, then the later change; a scenario the shrink refused,
// or that does not validate, is left out.
func stepBacks(chain []scenario.Scenario, refused func(scenario.Scenario) bool) []scenario.Scenario {
	last, oldest := len(chain)-1, 0
	var out []scenario.Scenario
	for i := last; i > oldest; i-- { // the change from chain[i-1] to chain[i]
		var gone []int
		if len(chain[i].Faults) < len(chain[i-1].Faults) {
			gone = lostFaults(chain[i-1].Faults, chain[i].Faults)
		}
		parts := chunks(len(gone))
		if len(gone) > 1 {
			parts = append(parts, [2]int{0, len(gone)})
		}
		for _, c := range parts {
			s := chain[last]
			s.Faults = slices.Clone(s.Faults)
			for _, j := range gone[c[0]:c[1]] {
				s.Faults = append(s.Faults, chain[i-1].Faults[j])
			}
			slices.SortStableFunc(s.Faults, func(a, b scenario.Step) int { return int(a.At - b.At) })
			out = append(out, s)
		}
		if i-1 > oldest {
			out = append(out, chain[i-1])
		}
	}
	slices.SortStableFunc(out, func(a, b scenario.Scenario) int { return len(a.Faults) - len(b.Faults) })
	seen := map[string]bool{fingerprint(chain[last]): true, fingerprint(chain[oldest]): true}
	var backs []scenario.Scenario
	for _, s := range out {
		if f := fingerprint(s); !seen[f] && (refused == nil || !refused(s)) && s.Validate() == nil {
			seen[f] = true
			backs = append(backs, s)
		}
	}
	if last == oldest {
		return nil
	}
	return append(backs[:min(len(backs), maxStepBacks-1)], chain[oldest])
}

// lostFaults returns the indexes of the faults of before that after has
// not, matching equal faults one to one.
func lostFaults(before, after []scenario.Step) []int {
	left := map[string]int{}
	for _, g := range after {
		left[stepKey(g)]++
	}
	var gone []int
	for i, f := range before {
		if k := stepKey(f); left[k] > 0 {
			left[k]--
			continue
		}
		gone = append(gone, i)
	}
	return gone
}

// stepKey names a step by everything in it, so equal steps match.
func stepKey(f scenario.Step) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// needed is how many of o.Measure replays must reproduce to meet o.Target.
func needed(o Options) int { return int(math.Ceil(o.Target*float64(o.Measure) - 1e-9)) }

// reaches says whether hits and misses of a check leave o.Target in reach.
func reaches(o Options, hits, misses int) bool {
	kept, _ := decide(needed(o), o.Measure, hits, misses)
	return kept
}

// checkRate replays s until it is certain whether needed(o) of o.Measure
// replays reproduce, and returns the hits and misses counted.
func checkRate(ctx context.Context, s scenario.Scenario, replay Replay, o Options, seed uint64) (hits, misses int, err error) {
	k, n := needed(o), o.Measure
	r, err := replayUntil(ctx, replay, s, seed, n, o.Shrink.Parallel, func(yes, no int) int { return open(k, n, yes, no) })
	for _, oc := range r.outs {
		if oc.Reproduced {
			hits++
		} else {
			misses++
		}
	}
	return hits, misses, err
}

// A replayer runs the shrinker's trials on real nodes: a trial reproduces
// the finding when it is unsafe with the same anomaly kind.
type replayer struct {
	backend trial.BackendFactory
	kind    string
}

func (r *replayer) replay(ctx context.Context, s scenario.Scenario, seed uint64) (Outcome, error) {
	tr, err := runTrial(ctx, s, seed, r.backend)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Observed: tr.Observed, Reason: tr.Reason,
		Reproduced: tr.Observed == evidence.Unsafe && tr.Check.Counts()[checker.Kind(r.kind)] > 0}, nil
}

// explain writes the minimal scenario's explain paragraph from its faults
// and the anomaly.
func explain(base scenario.Scenario, f *finding, fd Finding, seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Found by `lockpick explore %s --seed %d` (schedule %d of the search), with no scripted fault: ",
		base.Name, seed, f.tried.Schedule.Index)
	fmt.Fprintf(&b, "%s, with clients holding the lock %v. ", describeFaults(fd.minimal.Faults), fd.minimal.Hold.D())
	fmt.Fprintf(&b, "The search drew %d faults (%s); the shrinker kept %d in %d replays, each change kept only when %d of %d replays still broke the lock. ",
		len(f.tried.Schedule.Faults), f.tried.Schedule.Describe(), len(fd.minimal.Faults), fd.Shrunk.Replays, fd.Shrunk.K, fd.Shrunk.N)
	if fd.Shrunk.Confirmed {
		fmt.Fprintf(&b, "It reproduced in %s replays. ", fd.Rate())
	} else if len(fd.Shrunk.Steps) > 0 {
		c := fd.Shrunk.Steps[0]
		fmt.Fprintf(&b, "Replayed, it broke the lock %d of %d times, short of %d of %d, so it was not shrunk: a flaky finding. ", c.Reproduced, c.Replays, fd.Shrunk.K, fd.Shrunk.N)
	}
	fmt.Fprintf(&b, "The original trial showed: %s", fd.Anomaly)
	return b.String()
}

// describeFaults says the faults in a sentence, e.g. "at +350ms restart
// n3, then at +1.2s pause the node holding the lock's key for 800ms".
func describeFaults(steps []scenario.Step) string {
	if len(steps) == 0 {
		return "no fault at all (the lock breaks under load alone)"
	}
	var parts []string
	for _, s := range steps {
		what := s.Fault + " " + targetWords(s)
		if s.Fault == "pause-client" {
			what = "freeze client " + targetWords(s)
		}
		if len(s.Params) > 0 {
			var ps []string
			for _, k := range slices.Sorted(maps.Keys(s.Params)) {
				ps = append(ps, fmt.Sprintf("%s %v", k, s.Params[k]))
			}
			what += " (" + strings.Join(ps, ", ") + ")"
		}
		if s.For > 0 {
			what += fmt.Sprintf(" for %v", s.For.D())
		}
		parts = append(parts, fmt.Sprintf("at +%v %s", s.At.D(), what))
	}
	return strings.Join(parts, ", then ")
}

// targetWords says a step's target in words.
func targetWords(s scenario.Step) string {
	switch s.Node {
	case scenario.AimMaster:
		return "the current master"
	case scenario.AimReplica:
		return "a replica"
	case scenario.AimKeyHolder:
		return "a node holding the lock's key"
	case scenario.AimHolderResource:
		return "the holder's path to the resource"
	case scenario.AimHolder:
		return "the one holding the lock"
	case "":
		return fmt.Sprintf("%d", s.Client)
	}
	return s.Node
}
