package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"failover-lock-loss", "single-baseline", "ttl", "wait_replicas", "quick", "ci", "default"}
	for _, tc := range []struct{ in, want string }{
		{"failover-lock-los", "failover-lock-loss"},
		{"failovr-lock-loss", "failover-lock-loss"},
		{"tll", "ttl"}, // a transposition is one edit
		{"wait_replica", "wait_replicas"},
		{"quik", "quick"},
		{"Single-Baseline", "single-baseline"}, // case is ignored
		{"cj", "ci"},
		{"redlock", ""}, // too far from everything
		{"x", ""},
	} {
		if got := Closest(tc.in, names); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Hint("quik", names); got != ` (did you mean "quick"?)` {
		t.Errorf("Hint = %q", got)
	}
	if got := Hint("nothing-like-it", names); got != "" {
		t.Errorf("Hint for no near name = %q, want empty", got)
	}
}
