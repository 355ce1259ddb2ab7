package explore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockpick/lockpick/explore"
	"github.com/lockpick/lockpick/scenario"
)

func ms(n int) scenario.Duration { return scenario.Duration(time.Duration(n) * time.Millisecond) }

// noisy is a schedule whose only cause is the kill of n3 before 1s; the
// rest is noise.
func noisy() scenario.Scenario {
	s := scenario.Scenario{Name: "fake", Expect: scenario.Unsafe, Topology: scenario.Topology{Masters: 5},
		Lock: scenario.Lock{Kind: "redlock", Key: "lock", TTL: ms(2000), RetryDelay: ms(20)}, Clients: 4,
		Hold: ms(800), Duration: ms(3000)}
	s.Faults = []scenario.Step{
		{At: ms(100), Fault: "pause", Node: "n1", For: ms(400)},
		{At: ms(600), Fault: "kill", Node: "n3", For: ms(1200)},
		{At: ms(900), Fault: "latency", Node: "r2", For: ms(1000), Params: map[string]any{"latency": "200ms", "jitter": "50ms"}},
		{At: ms(1500), Fault: "clock-jump", Node: scenario.AimKeyHolder, Params: map[string]any{"offset": "3s"}},
	}
	return s
}

// cause is the fake trial: it breaks the lock when n3 is killed before 1s
// with at least 2 clients, 9 times in 10 (by seed).
func cause(_ context.Context, s scenario.Scenario, seed uint64) (explore.Outcome, error) {
	hit := false
	for _, f := range s.Faults {
		hit = hit || (f.Fault == "kill" && f.Node == "n3" && f.At.D() < time.Second)
	}
	if hit && s.Clients >= 2 && seed%10 != 0 {
		return explore.Outcome{Reproduced: true, Observed: "unsafe"}, nil
	}
	return explore.Outcome{Observed: "safe"}, nil
}

func TestShrink_FindsTheKnownCause(t *testing.T) {
	got, err := explore.Shrink(context.Background(), noisy(), cause, explore.ShrinkOptions{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	m := got.Minimal
	if !got.Confirmed || len(m.Faults) != 1 || m.Faults[0].Fault != "kill" || m.Faults[0].Node != "n3" {
		t.Fatalf("minimal = %s (confirmed %v), want the kill of n3 alone", m.Schedule(), got.Confirmed)
	}
	if m.Clients != 2 || m.Faults[0].At != 0 || m.Faults[0].For >= ms(1200) || m.Duration >= ms(3000) || m.Hold >= ms(800) {
		t.Errorf("minimal not reduced: %d clients, %s, duration %v, hold %v", m.Clients, m.Schedule(), m.Duration.D(), m.Hold.D())
	}
	if got.Replays == 0 || got.Replays > 150 || got.Exhausted {
		t.Errorf("replays = %d (exhausted %v)", got.Replays, got.Exhausted)
	}
	kept := 0
	for _, st := range got.Steps {
		if st.Kept {
			kept++
		}
		if st.Kept && st.Reproduced < got.K {
			t.Errorf("step %q kept with %d of %d", st.Change, st.Reproduced, st.Replays)
		}
	}
	if kept < 5 {
		t.Errorf("only %d steps kept: %+v", kept, got.Steps)
	}
}

func TestShrink_UnconfirmedFindingIsNotShrunk(t *testing.T) {
	s := noisy()
	s.Faults = s.Faults[2:] // without the cause
	got, err := explore.Shrink(context.Background(), s, cause, explore.ShrinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Confirmed || len(got.Minimal.Faults) != 2 || len(got.Steps) != 1 || got.Replays != 2 {
		t.Errorf("confirmed %v, %d faults left, %d steps, %d replays: want nothing shrunk after 2 failed replays",
			got.Confirmed, len(got.Minimal.Faults), len(got.Steps), got.Replays)
	}
}

func TestShrink_StopsAtTheReplayBudget(t *testing.T) {
	got, err := explore.Shrink(context.Background(), noisy(), cause, explore.ShrinkOptions{MaxReplays: 12})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exhausted || got.Replays > 12+5 {
		t.Errorf("exhausted %v after %d replays, want the budget of 12 to stop it", got.Exhausted, got.Replays)
	}
}

func TestShrink_HarnessErrorEndsIt(t *testing.T) {
	boom := errors.New("node did not start")
	_, err := explore.Shrink(context.Background(), noisy(), func(context.Context, scenario.Scenario, uint64) (explore.Outcome, error) {
		return explore.Outcome{}, boom
	}, explore.ShrinkOptions{})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the harness error", err)
	}
}

// Stopping early never changes a step's decision: over every sequence of
// N outcomes, the first prefix Decide calls done says what K of N says.
func TestDecide_SameAsAllNReplays(t *testing.T) {
	for _, kn := range [][2]int{{4, 5}, {1, 1}, {2, 3}, {3, 3}, {1, 4}, {7, 10}} {
		k, n := kn[0], kn[1]
		for bits := 0; bits < 1<<n; bits++ {
			yes, no, replays := 0, 0, 0
			kept, done := explore.Decide(k, n, 0, 0)
			for i := 0; i < n && !done; i++ {
				if bits>>i&1 == 1 {
					yes++
				} else {
					no++
				}
				replays++
				kept, done = explore.Decide(k, n, yes, no)
			}
			all := 0
			for i := range n {
				all += bits >> i & 1
			}
			if !done || kept != (all >= k) {
				t.Errorf("%d of %d, outcomes %0*b: done %v kept %v after %d replays, want kept %v", k, n, n, bits, done, kept, replays, all >= k)
			}
		}
	}
}

func TestDecide_AnswersAsSoonAsCertain(t *testing.T) {
	for _, c := range []struct {
		k, n, yes, no int
		kept, done    bool
		open          int
	}{
		{4, 5, 0, 0, false, false, 4},
		{4, 5, 0, 1, false, false, 4},
		{4, 5, 0, 2, false, true, 0}, // two that do not break the lock already say no
		{4, 5, 3, 1, false, false, 1},
		{4, 5, 4, 0, true, true, 0},   // four that do already say yes
		{4, 5, 3, 0, false, false, 1}, // a keep needs one more
		{1, 1, 0, 0, false, false, 1},
		{2, 3, 1, 1, false, false, 1},
	} {
		kept, done := explore.Decide(c.k, c.n, c.yes, c.no)
		if kept != c.kept || done != c.done {
			t.Errorf("Decide(%d, %d, %d yes, %d no) = kept %v done %v, want %v %v", c.k, c.n, c.yes, c.no, kept, done, c.kept, c.done)
		}
		if got := explore.Open(c.k, c.n, c.yes, c.no); got != c.open {
			t.Errorf("Open(%d, %d, %d yes, %d no) = %d, want %d", c.k, c.n, c.yes, c.no, got, c.open)
		}
	}
}

// With replays side by side finishing in any order, each step decides as
// K of its N seeds say, never runs more than N, and never more than
// Parallel at once.
func TestShrink_ParallelDecidesAsTheSeedsSay(t *testing.T) {
	var mu sync.Mutex
	inflight, most := 0, 0
	seen := map[uint64]bool{}
	flaky := func(ctx context.Context, s scenario.Scenario, seed uint64) (explore.Outcome, error) {
		mu.Lock()
		inflight++
		most = max(most, inflight)
		seen[seed] = true
		mu.Unlock()
		defer func() { mu.Lock(); inflight--; mu.Unlock() }()
		select { // finish in an order unrelated to the seed
		case <-time.After(time.Duration(seed*7919%13) * time.Millisecond):
		case <-ctx.Done():
			return explore.Outcome{}, ctx.Err()
		}
		return explore.Outcome{Reproduced: hit(s, seed)}, nil
	}
	for _, par := range []int{1, 2, 4, 8} {
		most = 0
		got, err := explore.Shrink(context.Background(), noisy(), flaky, explore.ShrinkOptions{Parallel: par, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if most > par {
			t.Errorf("parallel %d: %d replays at once", par, most)
		}
		if !got.Confirmed {
			t.Errorf("parallel %d: not confirmed: %+v", par, got.Steps[0])
		}
		for i, st := range got.Steps {
			if st.Replays > got.N || st.Replays+st.Cancelled > got.N {
				t.Errorf("parallel %d: step %q ran %d (+%d cancelled) of %d", par, st.Change, st.Replays, st.Cancelled, got.N)
			}
			if _, done := explore.Decide(got.K, got.N, st.Reproduced, st.Replays-st.Reproduced); !done {
				t.Errorf("parallel %d: step %d %q undecided at %d of %d", par, i, st.Change, st.Reproduced, st.Replays)
			}
		}
		if m := got.Minimal; len(m.Faults) != 1 || m.Faults[0].Node != "n3" {
			t.Errorf("parallel %d: minimal %s, want the kill of n3", par, m.Schedule())
		}
	}
}

// hit is the fake trial of [TestShrink_ParallelDecidesAsTheSeedsSay]:
// the kill of n3 breaks the lock except for seeds that are multiples of 7.
func hit(s scenario.Scenario, seed uint64) bool {
	for _, f := range s.Faults {
		if f.Fault == "kill" && f.Node == "n3" {
			return seed%7 != 0
		}
	}
	return false
}

// Faults go before anything else, in halves before one at a time.
func TestCandidates_DeltaDebuggingOrder(t *testing.T) {
	got := explore.Changes(noisy())
	want := []string{
		"drop 2 faults: +100ms pause n1 for 400ms; +600ms kill n3 for 1.2s",
		"drop 2 faults: +900ms latency r2 for 1s; +1.5s clock-jump @key-holder",
		"drop +100ms pause n1 for 400ms",
		"drop +600ms kill n3 for 1.2s",
		"drop +900ms latency r2 for 1s",
		"drop +1.5s clock-jump @key-holder",
	}
	if len(got) < len(want) {
		t.Fatalf("changes = %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %q, want %q", i, got[i], want[i])
		}
	}
	for _, c := range got[len(want):] {
		if strings.HasPrefix(c, "drop") {
			t.Errorf("%q comes after shortening and moving", c)
		}
	}
	one := noisy()
	one.Faults = one.Faults[1:2]
	if got := explore.Changes(one); len(got) == 0 || got[0] != "drop +600ms kill n3 for 1.2s" {
		t.Errorf("with one fault, changes = %q, want dropping it first", got)
	}
}

// Once dropping a fault alone is refused, no drop takes it again, and no
// scenario is replayed in two steps (moving the kill from +600ms to +0 is
// refused; once it is at +300ms, moving it to +0 gives that scenario again).
func TestShrink_NeitherRedropsANeededFaultNorRepeatsAScenario(t *testing.T) {
	var mu sync.Mutex
	var order []string // the scenario of each replay, in order (one at a time)
	both := func(ctx context.Context, s scenario.Scenario, seed uint64) (explore.Outcome, error) {
		mu.Lock()
		order = append(order, fmt.Sprintf("%+v|%d|%v|%v", s.Faults, s.Clients, s.Duration, s.Hold))
		mu.Unlock()
		kill, jump := false, false
		for _, f := range s.Faults {
			kill = kill || (f.Fault == "kill" && f.Node == "n3" && f.At >= ms(200) && f.At < ms(1000))
			jump = jump || f.Fault == "clock-jump"
		}
		return explore.Outcome{Reproduced: kill && jump && seed%10 != 0}, nil
	}
	s := noisy()
	s.Faults = append(s.Faults, scenario.Step{At: ms(200), Fault: "restart", Node: "n2"}, scenario.Step{At: ms(300), Fault: "restart", Node: "n4"})
	got, err := explore.Shrink(context.Background(), s, both, explore.ShrinkOptions{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Minimal; len(m.Faults) != 2 || m.Faults[0].Node != "n3" || m.Faults[0].At != ms(300) {
		t.Fatalf("minimal %s, want the kill of n3 at +300ms and the clock jump", m.Schedule())
	}
	refused := false
	for _, st := range got.Steps {
		if refused && strings.HasPrefix(st.Change, "drop") && strings.Contains(st.Change, "kill n3") {
			t.Errorf("%q tried after dropping the kill of n3 alone was refused", st.Change)
		}
		refused = refused || (strings.HasPrefix(st.Change, "drop +") && strings.Contains(st.Change, "kill n3") && !st.Kept)
	}
	if !refused {
		t.Errorf("the kill of n3 was never dropped alone: %+v", got.Steps)
	}
	seen := map[string]bool{}
	for i, o := range order {
		if i > 0 && order[i-1] == o {
			continue // the same step
		}
		if seen[o] {
			t.Errorf("replayed again in a later step: %s", o)
		}
		seen[o] = true
	}
}

// A minimal scenario below the rate steps back to the smallest scenarios
// first: undoing the last move, then putting back part, then all, of an
// earlier drop of two faults while keeping the move, and last the
// original; a scenario the shrink refused is left out.
func TestStepBacks_SmallestFirstAndDropsUndoneByParts(t *testing.T) {
	orig := noisy() // pause n1, kill n3, latency r2, clock-jump
	drop2 := orig
	drop2.Faults = orig.Faults[2:] // latency, clock-jump
	moved := drop2
	moved.Faults = slices.Clone(drop2.Faults)
	moved.Faults[0].At = 0
	sorted := func(s scenario.Scenario) string {
		s.Faults = slices.Clone(s.Faults)
		slices.SortStableFunc(s.Faults, func(a, b scenario.Step) int { return int(a.At - b.At) })
		return s.Schedule()
	}
	want := []string{
		drop2.Schedule(), // the move undone
		sorted(scenario.Scenario{Faults: []scenario.Step{orig.Faults[0], moved.Faults[0], moved.Faults[1]}}), // pause n1 back
		sorted(scenario.Scenario{Faults: []scenario.Step{moved.Faults[0], orig.Faults[1], moved.Faults[1]}}), // kill n3 back
		sorted(scenario.Scenario{Faults: []scenario.Step{orig.Faults[0], moved.Faults[0], orig.Faults[1], moved.Faults[1]}}),
		orig.Schedule(),
	}
	got := explore.StepBacks([]scenario.Scenario{orig, drop2, moved}, nil)
	if len(got) != len(want) {
		t.Fatalf("stepped back to %d scenarios, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if sorted(got[i]) != want[i] {
			t.Errorf("step back %d: %s, want %s", i+1, sorted(got[i]), want[i])
		}
	}
	refusedKill := func(s scenario.Scenario) bool {
		return len(s.Faults) == 3 && slices.ContainsFunc(s.Faults, func(f scenario.Step) bool { return f.Node == "n3" })
	}
	if got := explore.StepBacks([]scenario.Scenario{orig, drop2, moved}, refusedKill); len(got) != 4 {
		t.Errorf("with one partial undo refused by the shrink, %d step backs, want 4", len(got))
	}
	// Along a long chain, at most 6, the scenario the shrink started from last.
	chain := []scenario.Scenario{orig}
	for d := 1; d <= 8; d++ {
		s := chain[len(chain)-1]
		s.Duration -= ms(100)
		chain = append(chain, s)
	}
	got = explore.StepBacks(chain, nil)
	if len(got) != 6 || got[0].Duration != orig.Duration-ms(700) || got[5].Duration != orig.Duration {
		t.Errorf("step backs along 8 kept changes: %d, want the last 5 undone one by one, then the original", len(got))
	}
	if got := explore.StepBacks(chain[:1], nil); len(got) != 0 {
		t.Errorf("nothing kept, yet %d step backs", len(got))
	}
}

// A shorter trial keeps its faults in its first 70%, as the search draws
// them: a trial that ends as its faults fire breaks the lock only as often
// as the machine's timing allows.
func TestCandidates_ShorterTrialKeepsTheFaultWindow(t *testing.T) {
	got := explore.Changes(noisy()) // 3s, the last fault due at +1.5s
	if !slices.Contains(got, "trial of 2.25s") || slices.Contains(got, "trial of 1.5s") {
		t.Errorf("changes = %q, want a trial of 2.25s (1.5s is 67%% of it) and not of 1.5s", got)
	}
}
