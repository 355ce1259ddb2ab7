package explore

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// A Tried is one trial of the search: its schedule and what it showed.
type Tried struct {
	Schedule  Schedule       `json:"schedule"`
	Observed  string         `json:"observed"`
	Reason    string         `json:"reason,omitempty"`
	Anomalies map[string]int `json:"anomalies,omitempty"`
	// Prevented counts the anomalies a mitigation refused, e.g. stale
	// writes the resource fenced: evidence that the attack met it.
	Prevented map[string]int `json:"prevented,omitempty"`
	Example   string         `json:"example,omitempty"` // the first anomaly, in words
	// Exercised lists the faults that fired, by kind and the target they
	// hit (an aimed one as resolved), e.g. "pause-client c1".
	Exercised []string `json:"exercised,omitempty"`
	// Score is how close the guide judged the trial to breaking the lock
	// (closeness plus new behaviours, see docs/explore.md), in a random
	// search too, which does not use it; 0 for a trial that taught nothing.
	Score   float64 `json:"score,omitempty"`
	Seconds float64 `json:"seconds"`  // the trial's wall time
	EndedAt float64 `json:"ended_at"` // seconds from the start of the search
}

// A finding is an unsafe trial, with what it recorded and the kind of its
// first safety anomaly, which replays must show again.
type finding struct {
	tried Tried
	trial trial.TrialResult
	kind  string
}

// searcher runs schedules on base until one is unsafe or the budget
// is spent.
type searcher struct {
	base     scenario.Scenario
	gen      *Generator
	seed     uint64
	parallel int
	deadline time.Time // zero: no time budget
	maxTry   int       // 0: no trial budget
	backend  trial.BackendFactory
	began    time.Time
	progress func(t Tried)
	shard    results.Shard // plays every Count-th schedule, from Index-1
	strategy string        // StrategyGuided or StrategyRandom
	guide    *guide        // the closest schedules so far, for a guided search

	mu    sync.Mutex
	tried []Tried
}

// search plays schedules from index next on, parallel at a time, and
// returns the lowest-index unsafe one, or nil when the budget ran out
// first. With a finding at index i, trials above i are cancelled and the
// ones below finish, so a seed gives the same finding however the trials
// interleave.
func (sr *searcher) search(ctx context.Context, next int) (*finding, int, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu      sync.Mutex
		live    = map[int]context.CancelFunc{}
		best    *finding
		bestAt  int // best's search index
		firstEr error
		wg      sync.WaitGroup
		sem     = make(chan struct{}, sr.parallel)
	)
	over := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return best != nil || firstEr != nil
	}
	for i := next; ; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || over() || sr.spent(i) {
			next = i
			break
		}
		sc := sr.pick(i) // in index order, each with what the guide knows as its slot frees
		tctx, cancel := context.WithCancel(ctx)
		mu.Lock()
		live[i] = cancel
		mu.Unlock()
		wg.Go(func() {
			defer func() { <-sem }()
			defer cancel()
			f, err := sr.play(tctx, sc)
			mu.Lock()
			defer mu.Unlock()
			delete(live, i)
			switch {
			case err != nil && tctx.Err() != nil && ctx.Err() == nil:
				// cancelled because a lower index found something
			case err != nil:
				if firstEr == nil {
					firstEr = err
					stop()
				}
			case f != nil && (best == nil || i < bestAt):
				best, bestAt = f, i
				for j, cancel := range live {
					if j > i {
						cancel()
					}
				}
			}
		})
	}
	wg.Wait()
	if firstEr != nil {
		return nil, next, firstEr
	}
	if best != nil {
		return best, bestAt + 1, nil
	}
	return nil, next, ctx.Err()
}

// spent reports whether trial i would overrun the budget.
func (sr *searcher) spent(i int) bool {
	return (sr.maxTry > 0 && i >= sr.maxTry) || (!sr.deadline.IsZero() && time.Now().After(sr.deadline))
}

// schedule returns the index of the schedule that the search's i-th trial
// plays: i itself, or in a shard i/n the i-th of the schedules dealt to it.
func (sr *searcher) schedule(i int) int {
	if sr.shard.Whole() {
		return i
	}
	return i*sr.shard.Count + sr.shard.Index - 1
}

// pick returns the schedule of the search's i-th trial.
func (sr *searcher) pick(i int) Schedule {
	var gd *guide // a random search draws without one
	if sr.strategy == StrategyGuided {
		gd = sr.guide
	}
	return sr.gen.pick(sr.seed, sr.schedule(i), gd)
}

// play runs schedule sc and records it; it returns the finding if the
// trial was unsafe.
func (sr *searcher) play(ctx context.Context, sc Schedule) (*finding, error) {
	tr, err := runTrial(ctx, sc.Apply(sr.base), sc.Seed, sr.backend)
	if err != nil {
		return nil, err
	}
	score := 0.0
	if sr.guide != nil {
		score = sr.guide.learn(sc, tr, sr.base.Lock.TTL.D())
	}
	t, kind := tried(sc, tr, time.Since(sr.began))
	t.Score = score
	sr.mu.Lock()
	sr.tried = append(sr.tried, t)
	sr.mu.Unlock()
	if sr.progress != nil {
		sr.progress(t)
	}
	if t.Observed == evidence.Unsafe {
		return &finding{tried: t, trial: tr, kind: kind}, nil
	}
	return nil, nil
}

// runTrial plays one trial of s, with its node files in a temporary folder
// that goes once the trial ends: search and shrink keep only the result.
func runTrial(ctx context.Context, s scenario.Scenario, seed uint64, nb trial.BackendFactory) (trial.TrialResult, error) {
	dir, err := os.MkdirTemp("", "lockpick-explore-")
	if err != nil {
		return trial.TrialResult{}, &trial.InfraError{Err: err}
	}
	defer os.RemoveAll(dir)
	return trial.RunTrial(ctx, s, seed, dir, nb)
}

// byName returns counts by kind name, nil when there are none.
func byName(counts map[checker.Kind]int) map[string]int {
	if len(counts) == 0 {
		return nil
	}
	m := make(map[string]int, len(counts))
	for k, n := range counts {
		m[string(k)] = n
	}
	return m
}

// tried sums up a trial of sc, and returns the kind of its first safety
// anomaly ("" if none).
func tried(sc Schedule, tr trial.TrialResult, at time.Duration) (Tried, string) {
	t := Tried{Schedule: sc, Observed: tr.Observed, Reason: tr.Reason, Seconds: tr.Wall.Seconds(), EndedAt: at.Seconds()}
	t.Anomalies, t.Prevented = byName(tr.Check.Counts()), byName(tr.Check.PreventedCounts())
	for _, f := range tr.Evidence.Faults {
		if f.Fired != nil && f.Error == "" {
			t.Exercised = append(t.Exercised, strings.TrimSpace(f.Fault+" "+f.Target))
		}
	}
	// The example is the first safety anomaly, else the first of any kind.
	kind := ""
	for _, a := range tr.Check.Anomalies {
		if kind == "" && judge.BreaksSafety(a.Kind) {
			kind, t.Example = string(a.Kind), string(a.Kind)+": "+a.Message
		}
	}
	if t.Example == "" && len(tr.Check.Anomalies) > 0 {
		a := tr.Check.Anomalies[0]
		t.Example = string(a.Kind) + ": " + a.Message
	}
	return t, kind
}

// log returns the trials so far in index order.
func (sr *searcher) log() []Tried {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	out := slices.Clone(sr.tried)
	slices.SortFunc(out, func(a, b Tried) int { return a.Schedule.Index - b.Schedule.Index })
	return out
}
