package scenarios

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
)

// A slowFault takes its time to inject, and notes whether a heal came
// before the inject was done.
type slowFault struct {
	took          time.Duration
	injected      atomic.Bool
	healedTooSoon atomic.Bool
}

func (f *slowFault) Inject(ctx context.Context, n *cluster.Node) error {
	time.Sleep(f.took)
	f.injected.Store(true)
	return nil
}

func (f *slowFault) Heal(ctx context.Context, n *cluster.Node) error {
	if !f.injected.Load() {
		f.healedTooSoon.Store(true)
	}
	return nil
}

// A heal that comes due while its inject is still running waits for it,
// is recorded as late with when it was due and when it happened, and
// makes the trial inconclusive.
func TestNemesis_LateHealIsRecorded(t *testing.T) {
	f := &slowFault{took: 400 * time.Millisecond}
	steps := []Step{{Fault: "slow", For: Duration(100 * time.Millisecond)}}
	m := newSchedule(&trialEnv{}, steps, checker.NewRecorder(monoNow))
	m.faults[0], m.record[0] = f, evidence.Fault{Fault: "slow", Target: "n1", Desc: "slow n1"}
	ctx := context.Background()
	m.run(ctx, ctx, rand.New(rand.NewPCG(1, 2)), time.Now())

	if f.healedTooSoon.Load() {
		t.Error("the heal ran before the inject was done")
	}
	faults, _ := m.evidence()
	r := faults[0]
	if r.HealDue == nil || *r.HealDue != 0.1 {
		t.Errorf("heal due = %v, want 0.1s", r.HealDue)
	}
	if r.Healed == nil || *r.Healed < 0.4 {
		t.Errorf("healed = %v, want after the inject returned at 0.4s", r.Healed)
	}
	if r.HealLate == "" {
		t.Fatal("the late heal is not recorded")
	}
	ev := evidence.Evaluate(evidence.Input{Faults: faults, Require: []evidence.Requirement{{Grants: new(int)}}})
	if ev.Conclusive {
		t.Errorf("a trial whose heal came late is conclusive: %+v", ev)
	}
	t.Log(ev.Reasons)
}
