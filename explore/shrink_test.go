package explore_test

import (
	"context"
	"errors"
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
