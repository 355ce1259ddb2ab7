package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	Change     string `json:"change"` // e.g. "drop +350ms restart n3"
	Faults     int    `json:"faults"` // faults of the candidate
	Replays    int    `json:"replays"`
	Reproduced int    `json:"reproduced"`
	// Cancelled replays were still running when the outcome was decided.
	Cancelled int     `json:"cancelled,omitempty"`
	Kept      bool    `json:"kept"`
	Seconds   float64 `json:"seconds"`
}

// A Shrunk is the result of [Shrink].
type Shrunk struct {
	Minimal scenario.Scenario `json:"-"`
	// Confirmed says whether the original reproduced K of N times at the
	// start; when it did not, nothing was shrunk.
	Confirmed bool         `json:"confirmed"`
	Steps     []ShrinkStep `json:"steps"`
	Replays   int          `json:"replays"`
	// Cancelled counts the replays started but stopped (or not counted)
	// because their step was already decided; they are not in Replays.
	Cancelled int     `json:"cancelled,omitempty"`
	Seconds   float64 `json:"seconds"`
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

	refused map[string]bool // fingerprints of the changes refused
}

// Shrink reduces s while it still reproduces in K of N replays: it drops
// faults (halves first, as delta debugging does), shortens the trial, then
// shortens, moves earlier and simplifies each fault, and takes away
// clients and hold time, one change at a time, greedily, until no change
// is kept or the replay budget is spent. Each change is decided as soon as
// K of N is certain either way, with Parallel replays side by side; a
// scenario already decided is not replayed again, nor a drop that takes a
// fault whose drop alone was refused.
func Shrink(ctx context.Context, s scenario.Scenario, replay Replay, opt ShrinkOptions) (Shrunk, error) {
	o := opt.withDefaults()
	sh := &shrinker{replay: replay, o: o, seed: o.Seed}
	began := time.Now()
	out := Shrunk{Minimal: s, K: o.K, N: o.N, refused: map[string]bool{}}
	first, err := sh.try(ctx, "confirm the finding", s)
	if err != nil {
		return out, err
	}
	out.Steps = append(out.Steps, first)
	out.Confirmed = first.Kept
	cur := s
	out.Chain = []scenario.Scenario{s}
	rejected := map[string]bool{} // a change that failed once is not tried again
	needed := map[string]bool{}   // faults whose drop alone was refused: no drop takes them
	for out.Confirmed {
		kept := false
		for _, c := range candidates(cur) {
			if rejected[c.key] || out.refused[fingerprint(c.s)] || slices.ContainsFunc(c.drops, func(k string) bool { return needed[k] }) || c.s.Validate() != nil {
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
				out.refused[fingerprint(c.s)] = true
				if len(c.drops) == 1 {
					needed[c.drops[0]] = true
				}
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
	out.Minimal, out.Replays, out.Cancelled, out.Seconds = cur, sh.replays, sh.cancelled, time.Since(began).Seconds()
	return out, nil
}

// wasRefused says whether s was a change the shrink tried and refused.
func (r Shrunk) wasRefused(s scenario.Scenario) bool { return r.refused[fingerprint(s)] }

// fingerprint names what a shrink may change in s, so one scenario reached
// by two paths is recognised.
func fingerprint(s scenario.Scenario) string {
	faults := slices.Clone(s.Faults) // in time order: the order of steps due at once aside
	slices.SortStableFunc(faults, func(a, b scenario.Step) int { return int(a.At - b.At) })
	b, _ := json.Marshal(struct {
		Faults          []scenario.Step
		Clients         int
		Duration, Hold  scenario.Duration
		Isolate, Cycles any
	}{faults, s.Clients, s.Duration, s.Hold, s.Isolate, s.Cycles})
	return string(b)
}

type shrinker struct {
	replay    Replay
	o         ShrinkOptions
	seed      uint64
	replays   int
	cancelled int
}

// try replays s, Parallel at a time, until K of N reproduce or N-K+1 do
// not: the step is decided as soon as its outcome is certain.
func (sh *shrinker) try(ctx context.Context, change string, s scenario.Scenario) (ShrinkStep, error) {
	began := time.Now()
	step := ShrinkStep{Change: change, Faults: len(s.Faults)}
	k, n := sh.o.K, sh.o.N
	r, err := replayUntil(ctx, sh.replay, s, sh.seed, n, sh.o.Parallel, func(yes, no int) int { return open(k, n, yes, no) })
	sh.seed += uint64(r.launched)
	sh.replays += len(r.outs)
	sh.cancelled += r.cancelled
	if err != nil {
		return step, err
	}
	for _, oc := range r.outs {
		step.Replays++
		if oc.Reproduced {
			step.Reproduced++
		}
	}
	step.Cancelled = r.cancelled
	step.Kept, _ = decide(k, n, step.Reproduced, step.Replays-step.Reproduced)
	step.Seconds = time.Since(began).Seconds()
	return step, nil
}

// decide says whether a K-of-N step is kept, and whether that is certain
// yet, after yes replays reproduced the finding and no did not: kept once
// yes reaches K, rejected once no exceeds N-K, whatever the rest would show.
func decide(k, n, yes, no int) (kept, done bool) {
	switch {
	case yes >= k:
		return true, true
	case no > n-k:
		return false, true
	}
	return false, false
}

// open is how many replays a K-of-N step may have in flight: as many as a
// keep still needs (a rejection needs no more), and 0 once decided; a miss
// leaves room for one more of the N.
func open(k, n, yes, no int) int {
	if _, done := decide(k, n, yes, no); done {
		return 0
	}
	return k - yes
}

// replayRun is what [replayUntil] did.
type replayRun struct {
	outs      []Outcome // the replays that finished before the decision
	launched  int       // replays started, cancelled ones included
	cancelled int       // replays cancelled once the outcome was decided
}

// replayUntil runs at most runs replays of s with seeds seed, seed+1, ...,
// at most parallel at once and never more than want(yes, no) in flight.
// When want says 0 it launches no more and cancels those still running
// (their outcomes are not counted: the decision no longer depends on them).
// A harness error cancels the rest and is returned.
func replayUntil(ctx context.Context, replay Replay, s scenario.Scenario, seed uint64, runs, parallel int, want func(yes, no int) int) (replayRun, error) {
	type done struct {
		oc  Outcome
		err error
	}
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan done)
	var r replayRun
	var firstErr error
	yes, no, inflight, decided := 0, 0, 0, false
	for {
		for !decided && inflight < parallel && r.launched < runs && inflight < want(yes, no) {
			go func(seed uint64) {
				oc, err := replay(sub, s, seed)
				ch <- done{oc, err}
			}(seed + uint64(r.launched))
			r.launched++
			inflight++
		}
		if inflight == 0 {
			break
		}
		d := <-ch
		inflight--
		switch {
		case decided:
			r.cancelled++ // finished or cancelled after the decision: not counted
		case d.err != nil:
			firstErr, decided = d.err, true
			cancel()
		default:
			r.outs = append(r.outs, d.oc)
			if d.oc.Reproduced {
				yes++
			} else {
				no++
			}
			if want(yes, no) == 0 {
				decided = true
				cancel()
			}
		}
	}
	if firstErr != nil {
		return r, firstErr
	}
	return r, ctx.Err()
}

// A candidate is one smaller scenario and the change that made it.
type candidate struct {
	change string
	key    string // what a rejection rules out for later passes
	s      scenario.Scenario
	drops  []string // the faults a drop takes, by [faultKeys]
}

// candidates lists the changes to try on s, cheapest and likeliest first:
// drop half the faults, then smaller chunks down to single faults (delta
// debugging), then a shorter trial (every later replay is shorter), then
// shorten, move earlier and simplify each fault, then fewer clients and a
// shorter hold.
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
	keys := faultKeys(s.Faults)
	// Delta debugging: drop half the faults, then quarters, ..., then one
	// at a time; a rejected chunk rules out nothing smaller.
	for _, c := range chunks(len(s.Faults)) {
		with(dropText(s.Faults[c[0]:c[1]]), func(c2 *scenario.Scenario) { c2.Faults = slices.Delete(c2.Faults, c[0], c[1]) })
		out[len(out)-1].key = "drop " + strings.Join(keys[c[0]:c[1]], ", ")
		out[len(out)-1].drops = keys[c[0]:c[1]]
	}
	// A shorter trial makes every later replay shorter; its faults stay
	// within its [faultWindow] (a trial that ends as a fault fires breaks
	// the lock as often as the machine's timing allows), and it is tried
	// again once the faults end earlier.
	for _, d := range []time.Duration{round(s.Duration.D() / 2), round(s.Duration.D() * 3 / 4)} {
		if d >= 500*time.Millisecond && d < s.Duration.D() && lastDue(s.Faults) <= faultWindow(d) {
			with(fmt.Sprintf("trial of %v", d), func(c *scenario.Scenario) { c.Duration = scenario.Duration(d) })
			out[len(out)-1].key += fmt.Sprintf(" (faults due by %v)", lastDue(s.Faults))
		}
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
	if h := round(s.Hold.D() / 2); h >= 10*time.Millisecond && h < s.Hold.D() {
		with(fmt.Sprintf("hold %v", h), func(c *scenario.Scenario) { c.Hold = scenario.Duration(h) })
	}
	return out
}

// lastDue is when the last of faults is due, jitter included.
func lastDue(faults []scenario.Step) time.Duration {
	var due time.Duration
	for _, f := range faults {
		due = max(due, (f.At + f.Jitter).D())
	}
	return due
}

// chunks returns the [from, to) ranges of n faults to try dropping, in
// ddmin order: halves, then quarters, ..., then each fault alone; a range
// is listed once, at its first granularity.
func chunks(n int) [][2]int {
	var out [][2]int
	seen := map[[2]int]bool{}
	for g := 2; ; g *= 2 {
		g = min(g, n)
		for i := range g {
			c := [2]int{i * n / g, (i + 1) * n / g}
			if c[0] < c[1] && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
		if g >= n {
			return out
		}
	}
}

// faultKeys names each fault by what it is and where it hits, not when,
// so a fault that could not be dropped is not tried again once shortened
// or moved; the same fault twice gets "#2".
func faultKeys(faults []scenario.Step) []string {
	keys := make([]string, len(faults))
	seen := map[string]int{}
	for i, f := range faults {
		k := fmt.Sprintf("%s %s %d", f.Fault, f.Node, f.Client)
		seen[k]++
		if seen[k] > 1 {
			k += fmt.Sprintf(" #%d", seen[k])
		}
		keys[i] = k
	}
	return keys
}

// dropText says a drop in a shrink log, e.g. "drop +350ms restart n3" or
// "drop 2 faults: +0s kill n5; +350ms restart n4".
func dropText(faults []scenario.Step) string {
	if len(faults) == 1 {
		return "drop " + stepText(faults[0])
	}
	return fmt.Sprintf("drop %d faults: %s", len(faults), strings.TrimSpace(scenario.Scenario{Faults: faults}.Schedule()))
}

// stepText names a step in a shrink log, e.g. "+350ms restart n3".
func stepText(f scenario.Step) string {
	return strings.TrimSpace(scenario.Scenario{Faults: []scenario.Step{f}}.Schedule())
}
