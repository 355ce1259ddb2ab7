package explore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/scenario"
)

// A Replay runs one trial of s with the given seed and says whether it
// reproduced the finding. An error means the harness failed, and ends the
// shrink.
type Replay func(ctx context.Context, s scenario.Scenario, seed uint64) (Outcome, error)

// An Outcome is one replay's result.
type Outcome struct {
	Reproduced bool   `json:"reproduced"`
	Observed   string `json:"observed"`         // safe, unsafe, stuck, starves or inconclusive
	Reason     string `json:"reason,omitempty"` // why an inconclusive replay proves nothing
}

// ShrinkOptions configures [Shrink]. Zero fields take their defaults.
type ShrinkOptions struct {
	// K of N: a candidate is kept when at least K of N replays reproduce
	// the finding; replays stop as soon as the answer is known.
	// default: 4 of 5.
	K, N int
	// MaxReplays bounds the replays of the whole shrink. default: 150.
	MaxReplays int
	// Parallel is how many replays run at once. default: 1.
	Parallel int
	// Seed is the first replay's seed; each replay uses the next. default: 1.
	Seed uint64
	// Progress, if set, is called after each candidate.
	Progress func(step ShrinkStep, best scenario.Scenario)
}

func (o ShrinkOptions) withDefaults() ShrinkOptions {
	if o.K <= 0 || o.N <= 0 || o.K > o.N {
		o.K, o.N = 4, 5
	}
	if o.MaxReplays <= 0 {
		o.MaxReplays = 150
	}
	if o.Parallel <= 0 {
		o.Parallel = 1
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// A ShrinkStep is one candidate the shrinker tried.
type ShrinkStep struct {
	Change     string  `json:"change"` // e.g. "drop +350ms restart n3"
	Faults     int     `json:"faults"` // faults of the candidate
	Replays    int     `json:"replays"`
	Reproduced int     `json:"reproduced"`
	Kept       bool    `json:"kept"`
	Seconds    float64 `json:"seconds"`
}

// A Shrunk is the result of [Shrink].
type Shrunk struct {
	Minimal scenario.Scenario `json:"-"`
	// Confirmed says whether the original reproduced K of N times at the
	// start; when it did not, nothing was shrunk.
	Confirmed bool         `json:"confirmed"`
	Steps     []ShrinkStep `json:"steps"`
	Replays   int          `json:"replays"`
	Seconds   float64      `json:"seconds"`
	// Chain is the scenario after each kept change, the original first;
	// Minimal is its last.
	Chain []scenario.Scenario `json:"-"`
	// K of N replays had to reproduce a change for it to be kept.
	K int `json:"k"`
	N int `json:"n"`
	// Backoff lists the measurements that made the shrink step back from
	// a minimal scenario below the target rate, e.g. "5 of 10 with 2 faults".
	Backoff []string `json:"backoff,omitempty"`
	// Exhausted says the replay budget ran out before no change was left to try.
	Exhausted bool `json:"exhausted"`
}

// Shrink reduces s while it still reproduces in K of N replays: it drops
// faults, shortens them, moves them earlier, simplifies their parameters,
// and takes away clients, trial time and hold time, one change at a time,
// greedily, until no change is kept or the replay budget is spent.
func Shrink(ctx context.Context, s scenario.Scenario, replay Replay, opt ShrinkOptions) (Shrunk, error) {
	o := opt.withDefaults()
	sh := &shrinker{replay: replay, o: o, seed: o.Seed}
	began := time.Now()
	out := Shrunk{Minimal: s, K: o.K, N: o.N}
	first, err := sh.try(ctx, "confirm the finding", s)
	if err != nil {
		return out, err
	}
	out.Steps = append(out.Steps, first)
	out.Confirmed = first.Kept
	cur := s
	out.Chain = []scenario.Scenario{s}
	rejected := map[string]bool{} // a change that failed once is not tried again
	for out.Confirmed {
		kept := false
		for _, c := range candidates(cur) {
			if rejected[c.key] || c.s.Validate() != nil {
				continue
			}
			if sh.replays >= o.MaxReplays {
				out.Exhausted = true
				break
			}
			step, err := sh.try(ctx, c.change, c.s)
			if err != nil {
				return out, err
			}
			out.Steps = append(out.Steps, step)
			if step.Kept {
				cur, kept = c.s, true
				out.Chain = append(out.Chain, cur)
			} else {
				rejected[c.key] = true
			}
			if o.Progress != nil {
				o.Progress(step, cur)
			}
			if kept {
				break // start over from the smaller scenario
			}
		}
		if !kept || out.Exhausted {
			break
		}
	}
	out.Minimal, out.Replays, out.Seconds = cur, sh.replays, time.Since(began).Seconds()
	return out, nil
}

type shrinker struct {
	replay  Replay
	o       ShrinkOptions
	seed    uint64
	replays int
}

// try replays s until K reproduce or N-K+1 do not, Parallel at a time.
func (sh *shrinker) try(ctx context.Context, change string, s scenario.Scenario) (ShrinkStep, error) {
	began := time.Now()
	step := ShrinkStep{Change: change, Faults: len(s.Faults)}
	for step.Reproduced < sh.o.K && step.Replays-step.Reproduced <= sh.o.N-sh.o.K {
		batch := min(sh.o.Parallel, sh.o.K-step.Reproduced)
		outs, err := replayBatch(ctx, sh.replay, s, sh.seed, batch)
		if err != nil {
			return step, err
		}
		sh.seed += uint64(batch)
		sh.replays += batch
		for _, oc := range outs {
			step.Replays++
			if oc.Reproduced {
				step.Reproduced++
			}
		}
	}
	step.Kept = step.Reproduced >= sh.o.K
	step.Seconds = time.Since(began).Seconds()
	return step, nil
}

// replayBatch runs n replays of s at once, with seeds seed, seed+1, ...
func replayBatch(ctx context.Context, replay Replay, s scenario.Scenario, seed uint64, n int) ([]Outcome, error) {
	outs := make([]Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { outs[i], errs[i] = replay(ctx, s, seed+uint64(i)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// Measure replays s n times, parallel at a time, and returns the outcomes:
// the reproduction rate of a minimal scenario, measured rather than assumed.
func Measure(ctx context.Context, s scenario.Scenario, replay Replay, n, parallel int, seed uint64) ([]Outcome, error) {
	var all []Outcome
	for len(all) < n {
		batch := min(max(parallel, 1), n-len(all))
		outs, err := replayBatch(ctx, replay, s, seed+uint64(len(all)), batch)
		if err != nil {
			return nil, err
		}
		all = append(all, outs...)
	}
	return all, nil
}

// A candidate is one smaller scenario and the change that made it.
type candidate struct {
	change string
	key    string // what a rejection rules out for later passes
	s      scenario.Scenario
}

// candidates lists the changes to try on s, biggest first: drop a fault,
// then shorten, move earlier and simplify each, then fewer clients, a
// shorter trial and a shorter hold.
func candidates(s scenario.Scenario) []candidate {
	var out []candidate
	with := func(change string, edit func(c *scenario.Scenario)) {
		c := s
		c.Faults = slices.Clone(s.Faults)
		for i := range c.Faults {
			c.Faults[i].Params = maps.Clone(c.Faults[i].Params)
		}
		edit(&c)
		out = append(out, candidate{change: change, key: change, s: c})
	}
	for i, f := range s.Faults {
		with("drop "+stepText(f), func(c *scenario.Scenario) { c.Faults = slices.Delete(c.Faults, i, i+1) })
		// A fault that could not be dropped is not tried again once shortened or moved.
		out[len(out)-1].key = fmt.Sprintf("drop %d %s %s %d", i, f.Fault, f.Node, f.Client)
	}
	for i, f := range s.Faults {
		// The boldest change first, then half of it.
		for _, at := range []time.Duration{0, round(f.At.D() / 2)} {
			if at < f.At.D() && (at == 0 || at >= 50*time.Millisecond) {
				with(fmt.Sprintf("move %s to +%v", stepText(f), at), func(c *scenario.Scenario) { c.Faults[i].At = scenario.Duration(at) })
			}
		}
		for _, d := range []time.Duration{round(f.For.D() / 4), round(f.For.D() / 2)} {
			if f.For > 0 && d >= 10*time.Millisecond && d < f.For.D() {
				with(fmt.Sprintf("shorten %s to %v", stepText(f), d), func(c *scenario.Scenario) { c.Faults[i].For = scenario.Duration(d) })
			}
		}
		if f.Jitter > 0 {
			with("no jitter on "+stepText(f), func(c *scenario.Scenario) { c.Faults[i].Jitter = 0 })
		}
		for _, k := range slices.Sorted(maps.Keys(f.Params)) {
			with(fmt.Sprintf("no %s on %s", k, stepText(f)), func(c *scenario.Scenario) { delete(c.Faults[i].Params, k) })
		}
	}
	for _, n := range []int{2, s.Clients - 1} {
		if n >= 2 && n < s.Clients {
			with(fmt.Sprintf("%d clients", n), func(c *scenario.Scenario) {
				c.Clients = n
				c.Isolate = slices.DeleteFunc(slices.Clone(c.Isolate), func(p int) bool { return p > n })
				c.Cycles = c.Cycles[:min(len(c.Cycles), n)]
			})
		}
	}
	for _, d := range []time.Duration{round(s.Duration.D() / 2), round(s.Duration.D() * 3 / 4)} {
		if d >= 500*time.Millisecond && d < s.Duration.D() {
			with(fmt.Sprintf("trial of %v", d), func(c *scenario.Scenario) { c.Duration = scenario.Duration(d) })
		}
	}
	if h := round(s.Hold.D() / 2); h >= 10*time.Millisecond && h < s.Hold.D() {
		with(fmt.Sprintf("hold %v", h), func(c *scenario.Scenario) { c.Hold = scenario.Duration(h) })
	}
	return out
}

// stepText names a step in a shrink log, e.g. "+350ms restart n3".
func stepText(f scenario.Step) string {
	return strings.TrimSpace(scenario.Scenario{Faults: []scenario.Step{f}}.Schedule())
}
