package checker_test

import (
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
)

func TestMarginsOf(t *testing.T) {
	ev := lockEvent
	// p1 holds until its deadline at 100 ms, p2 takes over at 130 ms; p3
	// is granted at 300 ms after p2's release at 200 ms, no takeover; p1
	// writes and releases late; p2 releases 300 ms before its deadline.
	h := indexed(checker.History{
		ev(1, checker.Invoke, checker.FAcquire, 0, 0),
		ev(1, checker.OK, checker.FAcquire, 1, 100),
		ev(2, checker.Invoke, checker.FAcquire, 129, 0),
		ev(2, checker.OK, checker.FAcquire, 130, 500),
		ev(1, checker.Invoke, checker.FWrite, 140, 0),
		ev(1, checker.OK, checker.FWrite, 141, 0),
		ev(1, checker.Invoke, checker.FRelease, 150, 0),
		ev(1, checker.OK, checker.FRelease, 151, 0),
		ev(2, checker.Invoke, checker.FRelease, 200, 0),
		ev(2, checker.OK, checker.FRelease, 201, 0),
		ev(3, checker.Invoke, checker.FAcquire, 299, 0),
		ev(3, checker.OK, checker.FAcquire, 300, 700),
	})
	got := checker.MarginsOf(h)
	want := checker.Margins{Takeover: 30 * time.Millisecond, Takeovers: 1, Late: 2, Slack: 300 * time.Millisecond, InTime: 1}
	if got != want {
		t.Errorf("MarginsOf = %+v, want %+v", got, want)
	}

	// A double grant: the margin is negative; no late act.
	overlap := checker.History{
		ev(1, checker.Invoke, checker.FAcquire, 0, 0),
		ev(1, checker.OK, checker.FAcquire, 1, 100),
		ev(2, checker.Invoke, checker.FAcquire, 49, 0),
		ev(2, checker.OK, checker.FAcquire, 50, 150),
	}
	if got := checker.MarginsOf(overlap); got.Takeover != -50*time.Millisecond || got.Takeovers != 1 || got.Late != 0 {
		t.Errorf("MarginsOf(overlap) = %+v, want a -50ms takeover and nothing late", got)
	}

	// One process alone: a re-grant to itself is no takeover; its release
	// came 90 ms before its deadline.
	alone := checker.History{
		ev(1, checker.Invoke, checker.FAcquire, 0, 0),
		ev(1, checker.OK, checker.FAcquire, 1, 100),
		ev(1, checker.Invoke, checker.FRelease, 10, 0),
		ev(1, checker.OK, checker.FRelease, 11, 0),
		ev(1, checker.Invoke, checker.FAcquire, 20, 0),
		ev(1, checker.OK, checker.FAcquire, 21, 120),
	}
	if got := checker.MarginsOf(alone); got != (checker.Margins{Slack: 90 * time.Millisecond, InTime: 1}) {
		t.Errorf("MarginsOf(alone) = %+v, want no takeover and a 90ms slack", got)
	}
}
