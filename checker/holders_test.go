package checker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
)

func TestHolders(t *testing.T) {
	ms := int64(1_000_000)
	ev := lockEvent
	h := checker.History{
		ev(1, checker.Invoke, checker.FAcquire, 0, 0),
		ev(1, checker.OK, checker.FAcquire, 1, 100),
		ev(2, checker.Invoke, checker.FAcquire, 2, 0),
		ev(2, checker.Fail, checker.FAcquire, 3, 0),
		ev(1, checker.Invoke, checker.FRelease, 50, 0),
		ev(1, checker.OK, checker.FRelease, 51, 0),
		ev(2, checker.Invoke, checker.FAcquire, 60, 0),
		ev(2, checker.OK, checker.FAcquire, 61, 90),
	}
	for i := range h {
		h[i].Index = i
	}
	for _, c := range []struct {
		at   int64
		want []int
	}{{0, nil}, {10, []int{1}}, {55, nil}, {70, []int{2}}, {95, nil}} {
		if got := checker.Holders(h, c.at*ms); !slices.Equal(got, c.want) {
			t.Errorf("Holders at %dms = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestMayHoldUntil(t *testing.T) {
	ms := int64(1_000_000)
	ev := lockEvent
	released := checker.History{
		ev(1, checker.Invoke, checker.FAcquire, 0, 0),
		ev(1, checker.OK, checker.FAcquire, 1, 100),
		ev(1, checker.Invoke, checker.FRelease, 50, 0),
		ev(1, checker.OK, checker.FRelease, 51, 0),
	}
	unknownRelease := append(released[:3:3], ev(1, checker.Info, checker.FRelease, 51, 0))
	unknownAcquire := append(slices.Clone(released),
		ev(2, checker.Invoke, checker.FAcquire, 60, 0),
		ev(2, checker.Info, checker.FAcquire, 61, 0))
	for _, c := range []struct {
		name string
		h    checker.History
		ttl  int64
		want int64
	}{
		{"empty", nil, 500, 0},
		{"released", released, 500, 51},
		{"release unknown: the deadline", unknownRelease, 500, 100},
		{"unknown acquire: its invoke plus MaxTTL", unknownAcquire, 500, 560},
		{"unknown acquire, no MaxTTL: the longest lease", unknownAcquire, 0, 160},
	} {
		for i := range c.h {
			c.h[i].Index = i
		}
		got := checker.MayHoldUntil(c.h, &checker.Options{MaxTTL: time.Duration(c.ttl) * time.Millisecond})
		if got != c.want*ms {
			t.Errorf("%s: MayHoldUntil = %dms, want %dms", c.name, got/ms, c.want)
		}
	}
}
