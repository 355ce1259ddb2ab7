package checker_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
)

// randomCounter returns a small history of concurrent reads and writes of
// one counter, with values near each other, some writes with an unknown
// outcome or none, some failed, so that legal and illegal histories mix.
func randomCounter(rng *rand.Rand) checker.History {
	var h checker.History
	n := 2 + rng.IntN(9)
	for p := range n {
		call := rng.Int64N(20)
		ret := call + rng.Int64N(8)
		write := rng.IntN(2) == 0
		v := checker.IntValue(rng.Int64N(5))
		inv := checker.Event{Process: p, Type: checker.Invoke, F: checker.FRead, Key: "c", Time: call}
		done := checker.Event{Process: p, Type: checker.OK, F: checker.FRead, Key: "c", Value: v, Time: ret}
		if write {
			inv.F, inv.Value, done.F = checker.FWrite, v, checker.FWrite
			done.Type = []checker.Type{checker.OK, checker.OK, checker.OK, checker.Info, checker.Fail}[rng.IntN(5)]
		} else if rng.IntN(6) == 0 {
			done.Type = checker.Info
		}
		h = append(h, inv)
		if rng.IntN(8) > 0 {
			h = append(h, done)
		}
	}
	slices.SortStableFunc(h, func(a, b checker.Event) int { return cmp.Compare(a.Time, b.Time) })
	for i := range h {
		h[i].Index = i
	}
	return h
}

// TestCounterRule_AgreesWithModel checks the counter rule (counterrule.go)
// against porcupine's search of the counter model on thousands of random
// histories, and on generated ones.
func TestCounterRule_AgreesWithModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make(map[checker.Verdict]int)
	for i := range 20_000 {
		h := randomCounter(rng)
		rule, model := checker.CounterVerdicts(h, 10*time.Second)
		if got, want := rule["c"], model["c"]; got != want {
			t.Fatalf("history %d: counter rule %s, model %s\n%s", i, got, want, jsonl(h))
		}
		counts[model["c"]]++
	}
	t.Logf("verdicts: %v", counts)
	if counts[checker.Ok] < 2000 || counts[checker.Illegal] < 2000 {
		t.Errorf("verdicts %v: want a mix", counts)
	}
}

func jsonl(h checker.History) string {
	var s string
	for _, e := range h {
		s += fmt.Sprintf("%d %d %s %s %s %d\n", e.Index, e.Process, e.Type, e.F, e.Value, e.Time)
	}
	return s
}
