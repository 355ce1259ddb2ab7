package trial_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// TestReplyLoss_MissedDropIsInconclusive plays reply-loss with client 1
// doing one cycle only: the drop, from its first release, meets no second
// acquire, so no reply is lost (n1's key absent), and its second release,
// the moment of the kills, never comes. The trial must be inconclusive,
// never safe: the attack did not land.
func TestReplyLoss_MissedDropIsInconclusive(t *testing.T) {
	testredis.Require(t, false)
	s, err := scenario.Lookup("reply-loss")
	if err != nil {
		t.Fatal(err)
	}
	s.Clients, s.Cycles, s.Duration = 1, []int{1}, scenario.Duration(1500*time.Millisecond)
	tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the moment never came: client 1 releases (its 2nd release)", "required drop-replies n1: key held after it; found key absent"} {
		if tr.Observed != evidence.Inconclusive || !strings.Contains(tr.Reason, want) {
			t.Fatalf("observed %s (%s); want inconclusive: %s", tr.Observed, tr.Reason, want)
		}
	}
}

// A trial with scenario.Early ends once its faults have settled, not at a
// Duration that allowed for its moment coming as late as its window: here
// the moment (client 1's first grant) comes at once, the 200 ms pause
// heals, and the trial ends 500 ms later, not at 60 s.
func TestEarly_EndsOnceFaultsSettled(t *testing.T) {
	testredis.Require(t, false)
	s, err := scenario.Lookup("single-baseline")
	if err != nil {
		t.Fatal(err)
	}
	s.Require = nil
	s.Isolate = []int{2} // a client in a process of its own ends early too
	s.Duration = scenario.Duration(time.Minute)
	s.Faults = []scenario.Step{{Fault: "pause", Node: "n1", For: scenario.Duration(200 * time.Millisecond),
		When: &scenario.When{Event: scenario.MomentGranted, Client: 1}, Within: scenario.Duration(50 * time.Second)}}
	s.Early = &scenario.Early{Min: time.Second, Settle: 500 * time.Millisecond}
	tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Observed != evidence.Safe {
		t.Fatalf("observed %s (%s), want safe", tr.Observed, tr.Reason)
	}
	first, last := tr.History[0].Time, tr.History[0].Time
	for _, e := range tr.History {
		first, last = min(first, e.Time), max(last, e.Time)
	}
	// Without Early the clients run the whole minute; the bound leaves a
	// loaded machine half a minute for what takes about a second.
	if span := time.Duration(last - first); span > 30*time.Second {
		t.Errorf("the history spans %v: the trial ran on after its pause had healed", span)
	}
}
