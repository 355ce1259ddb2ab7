package trial

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/netlink"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/scenario"
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
	steps := []scenario.Step{{Fault: "slow", For: scenario.Duration(100 * time.Millisecond)}}
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

// Every fault on a Redis node records the lock's key on it before it hit
// and after: here a partition, whose node keeps its key throughout.
func TestNemesis_PartitionRecordsKeys(t *testing.T) {
	c := testredis.StartOne(t)
	rdb := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Proc.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "lock", "c1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	steps := []scenario.Step{{Fault: "partition", Node: "n1", For: scenario.Duration(100 * time.Millisecond)}}
	m, err := newNemesis(&trialEnv{c: c, key: "lock"}, steps, checker.NewRecorder(monoNow))
	if err != nil {
		t.Fatal(err)
	}
	m.run(ctx, ctx, rand.New(rand.NewPCG(1, 2)), time.Now())
	faults, _ := m.evidence()
	if r := faults[0]; r.KeyBefore != evidence.KeyHeld || r.KeyAfter != evidence.KeyHeld || r.Healed == nil || r.HealLate != "" {
		t.Fatalf("partition n1: %+v, want the key held before and after, healed on time", r)
	}
	ev := evidence.Evaluate(evidence.Input{Faults: faults, Require: []evidence.Requirement{{Grants: new(int)}, {Fault: "partition", Node: "n1", KeyBefore: evidence.KeyHeld}}})
	if !ev.Conclusive {
		t.Fatalf("inconclusive: %q", ev.Reasons)
	}
}

// A slowVerify fault is in place at once but takes its time to check.
type slowVerify struct{ slowFault }

func (f *slowVerify) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	time.Sleep(400 * time.Millisecond)
	return "checked", nil
}

// An aimed step heals at its time, as a named one does, not once its
// effect was checked: its heal waits only for the inject.
func TestNemesis_AimedHealIsOnTime(t *testing.T) {
	c := testredis.StartOne(t)
	steps := []scenario.Step{{Fault: "partition", Node: scenario.AimMaster, For: scenario.Duration(100 * time.Millisecond)}}
	m, err := newNemesis(&trialEnv{c: c, key: "lock"}, steps, checker.NewRecorder(monoNow))
	if err != nil {
		t.Fatal(err)
	}
	m.faults[0] = &slowVerify{}
	ctx := context.Background()
	m.run(ctx, ctx, rand.New(rand.NewPCG(1, 2)), time.Now())
	faults, _ := m.evidence()
	r := faults[0]
	if r.Target != "n1" || r.Aim != scenario.AimMaster || r.Effect == "" {
		t.Fatalf("aimed step: %+v, want n1 aimed at @master, with its effect", r)
	}
	if r.HealLate != "" || r.Healed == nil || *r.Healed > 0.3 {
		t.Fatalf("aimed step healed at %v (due %v, late %q), want on time at about 0.1s", r.Healed, r.HealDue, r.HealLate)
	}
}

// key_after knows a reentrant lock's hash key by its holder: the same
// holder's key is held, another holder's (the key lost and taken again) is
// absent for the one who held it, as for a string key.
func TestKeyAfter_HashKeyByItsHolder(t *testing.T) {
	c := testredis.StartOne(t)
	n := c.Nodes[0]
	rdb := redis.NewClient(&redis.Options{Addr: n.Proc.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	if err := rdb.HSet(ctx, "lock", "client-1:1", 1).Err(); err != nil {
		t.Fatal(err)
	}
	_, before := keyValueOn(ctx, n, "lock")
	if before != "client-1:1" {
		t.Fatalf("value before = %q, want the hash's field", before)
	}
	if got := keyAfter(ctx, n, "lock", before); got != evidence.KeyHeld {
		t.Errorf("same holder: key after = %q, want held", got)
	}
	rdb.Del(ctx, "lock")
	rdb.HSet(ctx, "lock", "client-2:1", 1)
	if got := keyAfter(ctx, n, "lock", before); got != evidence.KeyAbsent {
		t.Errorf("another holder: key after = %q, want absent", got)
	}
}

// A node's key is not read before a fault while an earlier fault still in
// place silences that node (it could not answer), and is read otherwise.
func TestSilenced(t *testing.T) {
	n1, n2 := &cluster.Node{}, &cluster.Node{}
	m := &nemesis{
		steps: []scenario.Step{{Fault: "pause"}, {Fault: "latency"}, {Fault: "kill"}},
		nodes: []*cluster.Node{n1, n2, n1},
		live:  []bool{true, true, false},
	}
	if !m.silenced(2, n1) {
		t.Error("n1, paused by step 0 still in place: not silenced")
	}
	if m.silenced(2, n2) {
		t.Error("n2, only slowed by a latency: silenced")
	}
	m.live[0] = false
	if m.silenced(2, n1) {
		t.Error("n1, its pause healed: still silenced")
	}
	m.live[0] = true
	if m.silenced(0, n1) {
		t.Error("a step silences its own node before it fires")
	}
}

// A late heal on a Redis master nothing else talks to, or a client's
// link to one, is seen only through the clients' operations; anything
// else may be seen by more (a sentinel, a replica, a lock program's
// unrecorded requests).
func TestSeenBy(t *testing.T) {
	n1, n2, n3 := &cluster.Node{Name: "n1"}, &cluster.Node{Name: "n2"}, &cluster.Node{Name: "n3"}
	m := &nemesis{
		env:   &trialEnv{c: &cluster.Cluster{Nodes: []*cluster.Node{n1, n2}}, clients: 3, recorded: true},
		steps: []scenario.Step{{Fault: "partition"}, {Fault: "kill"}, {Fault: "clock-jump"}, {Fault: "pause-client"}},
	}
	for _, tc := range []struct {
		i      int
		target string
		want   []int
	}{
		{0, "n1", []int{1, 2, 3}},
		{0, "n2-c2", []int{2}},
		{1, "n2", []int{1, 2, 3}},
		{2, "n1", nil}, // a clock changes what the node does unasked
		{3, "c1", nil}, // a paused client's own future moves
	} {
		if got := m.seenBy(tc.i, tc.target); !slices.Equal(got, tc.want) {
			t.Errorf("step %d on %s: seen by %v, want %v", tc.i, tc.target, got, tc.want)
		}
	}
	m.env.recorded = false
	if got := m.seenBy(0, "n1"); got != nil {
		t.Errorf("a lock program's lock: seen by %v, want nil", got)
	}
	m.env.recorded = true
	// n1 with a replica (n3) and sentinels: n2 is still only the clients'.
	m.env.c = &cluster.Cluster{Nodes: []*cluster.Node{n1, n2, n3}, Sentinels: []*cluster.Node{{Name: "s1"}}}
	n3.Repl = &netlink.Link{}
	for target, want := range map[string][]int{"n1": nil, "n3": nil, "n2": {1, 2, 3}} {
		if got := m.seenBy(0, target); !slices.Equal(got, want) {
			t.Errorf("with a replica and sentinels, %s: seen by %v, want %v", target, got, want)
		}
	}
}

// A late heal of the kill or pause of an etcd or ZooKeeper member names
// its ensemble, for the evidence to judge the quorum; any other fault, or
// a Redis node, names none.
func TestEnsemble(t *testing.T) {
	e1, e2, e3, n1 := &cluster.Node{Name: "e1"}, &cluster.Node{Name: "e2"}, &cluster.Node{Name: "e3"}, &cluster.Node{Name: "n1"}
	m := &nemesis{
		env:   &trialEnv{c: &cluster.Cluster{Nodes: []*cluster.Node{n1}, Etcd: []*cluster.Node{e1, e2, e3}}, recorded: true},
		steps: []scenario.Step{{Fault: "kill"}, {Fault: "pause"}, {Fault: "power-loss"}, {Fault: "kill"}},
		nodes: []*cluster.Node{e2, e3, e1, n1},
	}
	for i, want := range [][]string{{"e1", "e2", "e3"}, {"e1", "e2", "e3"}, nil, nil} {
		if got := m.ensemble(i); !slices.Equal(got, want) {
			t.Errorf("step %d (%s %s): ensemble %v, want %v", i, m.steps[i].Fault, m.nodes[i].Name, got, want)
		}
	}
	m.env.recorded = false
	if got := m.ensemble(0); got != nil {
		t.Errorf("a lock program's lock: ensemble %v, want nil", got)
	}
}
