package judge_test

import (
	"testing"

	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
)

// An arm contradicts its expectation by its conclusive trials alone: a
// violation where safe was expected, none where one was; an arm whose only
// miss is an inconclusive trial does not.
func TestContradicts(t *testing.T) {
	for _, tc := range []struct {
		a    results.ArmResult
		want bool
	}{
		{results.ArmResult{Expect: "safe", Conclusive: 20, Violations: 1}, true},
		{results.ArmResult{Expect: "safe", Conclusive: 19, Inconclusive: 1}, false},
		{results.ArmResult{Expect: "unsafe", Conclusive: 20}, true},
		{results.ArmResult{Expect: "unsafe", Conclusive: 19, Violations: 19, Inconclusive: 1}, false},
		{results.ArmResult{Expect: "unsafe", Conclusive: 20, Violations: 20, Matched: true}, false},
		{results.ArmResult{Expect: "safe", Inconclusive: 20}, false},
	} {
		if got := judge.Contradicts(tc.a); got != tc.want {
			t.Errorf("Contradicts(%+v) = %v, want %v", tc.a, got, tc.want)
		}
	}
}
