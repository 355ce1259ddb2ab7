package explore

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

func generator(t *testing.T, name string, kinds []string) (*Generator, scenario.Scenario) {
	t.Helper()
	base, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator(base, kinds)
	if err != nil {
		t.Fatal(err)
	}
	return g, base
}

// Without a guide, or with nothing learnt, pick draws exactly the random
// schedules; with a pool, most draws are changes of a pooled schedule,
// each valid, clash-free and inside the fault window.
func TestPick_GuidedChangesThePool(t *testing.T) {
	g, base := generator(t, "redlock-baseline", nil)
	gd := &guide{}
	for i := range 40 {
		if want := g.Schedule(3, i); !reflect.DeepEqual(g.pick(3, i, nil), want) {
			t.Fatalf("unguided pick %d is not Schedule(3, %d)", i, i)
		}
		if !reflect.DeepEqual(g.pick(3, i, gd), g.Schedule(3, i)) {
			t.Fatalf("guided pick %d with an empty pool is not the random schedule", i)
		}
	}
	parent := g.Schedule(3, 1)
	gd.add(scored{sc: parent, score: 1.5})
	changed := 0
	for i := warmup; i < warmup+200; i++ {
		sc := g.pick(3, i, gd)
		if !reflect.DeepEqual(sc, g.pick(3, i, gd)) {
			t.Fatalf("draw %d differs with the same pool", i)
		}
		if sc.Change == "" {
			continue
		}
		changed++
		if !strings.HasPrefix(sc.Change, "#1: ") {
			t.Errorf("draw %d: change %q does not name its parent #1", i, sc.Change)
		}
		if err := sc.Apply(base).Validate(); err != nil {
			t.Errorf("draw %d (%s): %v", i, sc.Change, err)
		}
		for a, fa := range sc.Faults {
			if fa.At.D() > faultWindow(base.Duration.D()) {
				t.Errorf("draw %d (%s): %s at %v, past the fault window", i, sc.Change, fa.Fault, fa.At)
			}
			for _, fb := range sc.Faults[a+1:] {
				if clash(fa, fb) {
					t.Errorf("draw %d (%s): %s on %s clashes with %s on %s", i, sc.Change, fa.Fault, fa.Node, fb.Fault, fb.Node)
				}
			}
		}
	}
	if changed < 100 || changed > 170 {
		t.Errorf("%d of 200 guided draws were changes, want about %.0f", changed, 200*(1-fresh))
	}
}

// A trial whose pause of the holder waited for no moment, however little
// it scored (it missed the lock), an inconclusive one's too, is anchored
// by the next draw, once, however often its schedule's trials are learnt.
func TestPick_AnchorsEachPauseOnce(t *testing.T) {
	g, base := generator(t, "etcd-pause-holder", []string{"pause-client", "latency"})
	pause := scenario.Step{At: scenario.Duration(3 * time.Second), Fault: "pause-client", Node: scenario.AimHolder, For: scenario.Duration(3 * time.Second)}
	sc := Schedule{Index: 2, Hold: scenario.Duration(time.Second / 2), Faults: []scenario.Step{pause}}
	fired := 3.0
	tr := trial.TrialResult{Observed: evidence.Safe}
	tr.Evidence.Faults = []evidence.Fault{{Step: 0, Fault: "pause-client", Target: "c1", Fired: &fired, KeyBefore: evidence.KeyAbsent}}
	gd := &guide{}
	inconclusive := tr
	inconclusive.Observed = evidence.Inconclusive
	gd.learn(sc, inconclusive, base.Lock.TTL.D())
	if len(gd.toAnchor) != 1 {
		t.Fatal("an inconclusive trial's pause does not wait to be anchored (alone, without what made it so)")
	}
	gd.learn(sc, tr, base.Lock.TTL.D())
	anchors := 0
	for i := 10; i < 50; i++ {
		got := g.pick(1, i, gd)
		if got.Change != "#2: anchor pause-client alone" {
			continue // a draw, or the anchor of one
		}
		anchors++
		if i != 10 || len(got.Faults) != 1 || got.Faults[0].When == nil || got.Faults[0].Client != 1 {
			t.Errorf("draw %d: %s %s, want only the pause of client 1 anchored, first", i, got.Change, got.Describe())
		}
		if err := got.Apply(base).Validate(); err != nil {
			t.Errorf("draw %d: %v", i, err)
		}
	}
	if anchors != 1 {
		t.Errorf("the pause was anchored %d times in 40 draws, want once", anchors)
	}
}

// A drawn pause of a named client waits for nothing its trial shows: its
// anchor is played in its place, the schedule as drawn right after it, and
// the random warm-up goes on after; neither is anchored again.
func TestPick_AnchorsAsDrawn(t *testing.T) {
	g, base := generator(t, "etcd-pause-holder", []string{"pause-client"})
	for _, stride := range []int{0, 3} { // a whole search, a shard of three
		gd := &guide{stride: stride}
		next := max(1, stride)
		anchor := g.pick(1, 0, gd)
		if anchor.Index != 0 || anchor.Change != fmt.Sprintf("#%d: anchor pause-client alone", next) || anchor.Faults[0].When == nil || anchor.Faults[0].Client != base.Isolate[0] {
			t.Errorf("stride %d: schedule 0 is %q %s, want the pause of the random search's first anchored to client %d", stride, anchor.Change, anchor.Describe(), base.Isolate[0])
		}
		drawn := g.pick(1, next, gd)
		if drawn.Index != next || drawn.Change != "" || !reflect.DeepEqual(drawn.Faults, g.Schedule(1, 0).Faults) {
			t.Errorf("stride %d: schedule %d is %q %s, want the random search's first", stride, next, drawn.Change, drawn.Describe())
		}
		gd.learn(drawn, trial.TrialResult{Observed: evidence.Safe}, base.Lock.TTL.D())
		if len(gd.toAnchor) != 0 {
			t.Errorf("stride %d: the drawn schedule waits to be anchored again", stride)
		}
		if second := g.pick(1, 2*next, gd); second.Index != 2*next || !strings.HasPrefix(second.Change, fmt.Sprintf("#%d: anchor", 3*next)) {
			t.Errorf("stride %d: schedule %d is %q %s, want the anchor of the random search's second", stride, 2*next, second.Change, second.Describe())
		}
	}
}

// The steps of a group fault (one fault on a majority) move together.
func TestMutate_GroupMovesTogether(t *testing.T) {
	g, _ := generator(t, "redlock-baseline", []string{"pause"})
	group := []scenario.Step{
		{At: scenario.Duration(300 * time.Millisecond), Fault: "pause", Node: "n1", For: scenario.Duration(time.Second)},
		{At: scenario.Duration(300 * time.Millisecond), Fault: "pause", Node: "n2", For: scenario.Duration(time.Second)},
		{At: scenario.Duration(300 * time.Millisecond), Fault: "pause", Node: "n3", For: scenario.Duration(time.Second)},
	}
	parent := Schedule{Index: 4, Hold: scenario.Duration(50 * time.Millisecond), Faults: group}
	for i := range 100 {
		sc := g.mutate(scored{sc: parent}, nil, rand.New(rand.NewPCG(1, uint64(i))), 100+i)
		for _, gr := range groupSteps(sc.Faults, scored{}) {
			if st := gr.steps; len(st) == 3 && (st[0].At != st[2].At || st[0].For != st[2].For) {
				t.Fatalf("%s split the group: %s", sc.Change, sc.Describe())
			}
		}
	}
}

// The pool keeps the closest schedules, at most poolSize, and ignores a
// trial that taught nothing.
func TestGuide_KeepsTheClosest(t *testing.T) {
	gd := &guide{}
	gd.add(scored{sc: Schedule{Index: 99}})
	if _, ok := gd.parent(rand.New(rand.NewPCG(1, 1))); ok {
		t.Fatal("a score of 0 entered the pool")
	}
	for i := range 20 {
		gd.add(scored{sc: Schedule{Index: i}, score: float64(i%10) + 0.5})
	}
	if len(gd.pool) != poolSize {
		t.Fatalf("pool holds %d, want %d", len(gd.pool), poolSize)
	}
	for _, s := range gd.pool {
		if s.score < 5.5 {
			t.Errorf("pool kept #%d at %.1f over closer ones", s.sc.Index, s.score)
		}
	}
}

// closeness reads the handover margin, late acts, a holder's delay and
// refused anomalies from the trial; an inconclusive trial scores 0.
func TestCloseness(t *testing.T) {
	ms := int64(time.Millisecond)
	ev := func(p int, typ checker.Type, f string, at, validUntil int64) checker.Event {
		return checker.Event{Process: p, Type: typ, F: f, Key: "lock", Time: at * ms, ValidUntil: validUntil * ms}
	}
	h := checker.History{
		ev(1, checker.Invoke, checker.FAcquire, 0, 0),
		ev(1, checker.OK, checker.FAcquire, 1, 1000),
		ev(2, checker.Invoke, checker.FAcquire, 1099, 0),
		ev(2, checker.OK, checker.FAcquire, 1100, 2000),
	}
	for i := range h {
		h[i].Index = i
	}
	ttl := time.Second
	tr := trial.TrialResult{Observed: evidence.Safe, History: h}
	if got := score(tr, ttl); got < 0.89 || got > 0.91 {
		t.Errorf("a 100 ms handover under a 1 s TTL scored %.2f, want 0.90", got)
	}
	late := append(h[:4:4], ev(1, checker.Invoke, checker.FWrite, 1200, 0), ev(1, checker.OK, checker.FWrite, 1201, 0))
	for i := range late {
		late[i].Index = i
	}
	if got := score(trial.TrialResult{Observed: evidence.Safe, History: late}, ttl); got < 1.39 {
		t.Errorf("a late write scored %.2f, want the handover's 0.9 and 0.5 more", got)
	}
	// Late with nobody granted meanwhile (the service down, say): far from
	// a double grant.
	alone := checker.History{h[0], h[1], ev(1, checker.Invoke, checker.FWrite, 1200, 0), ev(1, checker.OK, checker.FWrite, 1201, 0)}
	for i := range alone {
		alone[i].Index = i
	}
	if got := score(trial.TrialResult{Observed: evidence.Safe, History: alone}, ttl); got != lateAlone {
		t.Errorf("a late write with no takeover scored %.2f, want %.2f", got, lateAlone)
	}
	alone = append(alone, ev(1, checker.Invoke, checker.FRelease, 1300, 0), ev(1, checker.OK, checker.FRelease, 1301, 0))
	for i := range alone {
		alone[i].Index = i
	}
	if got := score(trial.TrialResult{Observed: evidence.Safe, History: alone}, ttl); got != lateAlone {
		t.Errorf("a late write and release with no takeover scored %.2f, want %.2f: the service down counts once", got, lateAlone)
	}
	released := checker.History{h[0], h[1], ev(1, checker.Invoke, checker.FRelease, 500, 0), ev(1, checker.OK, checker.FRelease, 501, 0), h[2], h[3]}
	for i := range released {
		released[i].Index = i
	}
	if got := score(trial.TrialResult{Observed: evidence.Safe, History: released}, ttl); got != 0 {
		t.Errorf("a grant after a release scored %.2f, want 0", got)
	}
	lost := trial.TrialResult{Observed: evidence.Safe, History: released}
	lost.Evidence.Faults = []evidence.Fault{{Fault: "restart", Target: "n1", KeyBefore: "held", KeyAfter: "absent"}}
	if got := score(lost, ttl); got != 1 {
		t.Errorf("a node that lost the held key scored %.2f, want 1", got)
	}
	// Under a 500 ms hold a holder has 500 ms of its 1 s lease to spare; one
	// that writes with 100 ms left used 80% of it.
	slow := checker.History{h[0], h[1], ev(1, checker.Invoke, checker.FWrite, 900, 0), ev(1, checker.OK, checker.FWrite, 901, 0)}
	for i := range slow {
		slow[i].Index = i
	}
	if got := score(trial.TrialResult{Observed: evidence.Safe, History: slow}, ttl); got < 0.39 || got > 0.41 {
		t.Errorf("a write with 100 ms of its lease left scored %.2f, want 0.40", got)
	}
	// A holder frozen for 1.5 TTL scores a point, for half a TTL half one;
	// a client frozen while it held nothing, or a node cut off, nothing.
	at := func(s float64) *float64 { return &s }
	frozen := trial.TrialResult{Observed: evidence.Safe, History: released}
	for _, c := range []struct {
		f    evidence.Fault
		want float64
	}{
		{evidence.Fault{Fault: "pause-client", Target: "c1", KeyBefore: "held", Fired: at(1), Healed: at(2.5)}, 1},
		{evidence.Fault{Fault: "partition", Target: "e2-c1", KeyBefore: "held", Fired: at(1), Healed: at(1.5)}, 0.5},
		{evidence.Fault{Fault: "pause-client", Target: "c1", KeyBefore: "absent", Fired: at(1), Healed: at(2.5)}, 0},
		{evidence.Fault{Fault: "partition", Target: "e2", KeyBefore: "held", Fired: at(1), Healed: at(2.5)}, 0},
	} {
		frozen.Evidence.Faults = []evidence.Fault{c.f}
		if got := score(frozen, ttl); got < c.want-0.01 || got > c.want+0.01 {
			t.Errorf("%s %s (key %s) for %.1fs scored %.2f, want %.2f", c.f.Fault, c.f.Target, c.f.KeyBefore, *c.f.Healed-*c.f.Fired, got, c.want)
		}
	}
	tr.Observed = evidence.Inconclusive
	if got := score(tr, ttl); got != 0 {
		t.Errorf("an inconclusive trial scored %.2f, want 0", got)
	}
}

// A behaviour counts as new once: the second trial that shows it learns
// nothing from it.
func TestGuide_NoveltyOnce(t *testing.T) {
	fired := 0.3
	tr := trial.TrialResult{Observed: evidence.Safe}
	tr.Evidence.Faults = []evidence.Fault{{Fault: "restart", Aim: "@master", Fired: &fired, KeyBefore: "held", KeyAfter: "absent"}}
	gd := &guide{}
	gd.learn(Schedule{Index: 1}, tr, time.Second)
	gd.learn(Schedule{Index: 2}, tr, time.Second)
	if len(gd.pool) != 2 || gd.pool[0].score != 1.25 || gd.pool[1].score != 1 {
		t.Errorf("pool = %+v, want #1 at 1.25 (a lost key, new) and #2 at 1 (the same, seen)", gd.pool)
	}
	if got := features(tr, checker.Margins{}); len(got) != 1 || got[0] != "restart @master held>absent" {
		t.Errorf("features = %q", got)
	}
}

// score is closeness with the trial's own margins.
func score(tr trial.TrialResult, ttl time.Duration) float64 {
	return closeness(tr, checker.MarginsOf(tr.History), ttl, 500*time.Millisecond)
}

// A change works mostly on the fault that met the lock in the parent's
// trial, and mostly lengthens it when it resizes it.
func TestMutate_WorksOnTheFaultThatMetTheLock(t *testing.T) {
	g, _ := generator(t, "etcd-pause-holder", []string{"pause-client", "latency"})
	pause := scenario.Step{At: scenario.Duration(time.Second), Fault: "pause-client", Client: 1, For: scenario.Duration(time.Second)}
	slow := scenario.Step{At: scenario.Duration(2 * time.Second), Fault: "latency", Node: "e1", For: scenario.Duration(time.Second),
		Params: map[string]any{"latency": "100ms"}}
	parent := scored{sc: Schedule{Index: 3, Hold: scenario.Duration(time.Second / 2), Faults: []scenario.Step{pause, slow}}, score: 1, met: map[int]bool{0: true}}
	onPause, onOther, longer, shorter := 0, 0, 0, 0
	for i := range 400 {
		sc := g.mutate(parent, nil, rand.New(rand.NewPCG(7, uint64(i))), 100+i)
		for _, what := range strings.Split(strings.TrimPrefix(sc.Change, "#3: "), ", ") {
			switch {
			case strings.HasPrefix(what, "add"), what == "hold":
			case strings.HasSuffix(what, " pause-client"):
				onPause++
			default:
				onOther++
			}
		}
		if i := slices.IndexFunc(sc.Faults, func(s scenario.Step) bool { return s.Fault == "pause-client" && s.At == pause.At }); i >= 0 && sc.Faults[i].Client == 1 {
			switch f := sc.Faults[i].For; {
			case f > pause.For:
				longer++
			case f < pause.For:
				shorter++
			}
		}
	}
	if share := float64(onPause) / float64(onPause+onOther); share < 0.65 || share > 0.9 {
		t.Errorf("%d changes of the fault that met the lock, %d of the other: want about %.0f%%", onPause, onOther, 100*(onFocus+(1-onFocus)/2))
	}
	if longer < 2*shorter || shorter == 0 {
		t.Errorf("the fault that met the lock was lengthened %d times, shortened %d: want about 3 to 1", longer, shorter)
	}
}

// A client fault that met the lock comes before a member's fault that
// met it too (on etcd, one that fired while anyone held the lock).
func TestPickGroup_ClientFaultThatMetFirst(t *testing.T) {
	groups := []group{{met: true}, {met: true, client: 1}, {missed: true, client: 2}}
	n := [3]int{}
	for i := range 400 {
		n[pickGroup(&draw{rng: rand.New(rand.NewPCG(3, uint64(i)))}, groups)]++
	}
	if n[1] < 280 || n[0] == 0 || n[2] == 0 {
		t.Errorf("picked the member's fault %d times, the client fault that met the lock %d, the one that missed %d: want the second mostly, the others sometimes", n[0], n[1], n[2])
	}
}

// A client fault that missed the lock (its client held none when it hit)
// is anchored, by some changes, to that client's next read under the lock;
// the schedule stays valid and its trial lasts until the anchored fault,
// however late its moment, has healed and a lease run out.
func TestMutate_AnchorsAClientFaultThatMissed(t *testing.T) {
	g, base := generator(t, "etcd-pause-holder", []string{"pause-client", "latency"})
	pause := scenario.Step{At: scenario.Duration(2 * time.Second), Fault: "pause-client", Node: scenario.AimHolder, For: scenario.Duration(3 * time.Second)}
	parent := scored{sc: Schedule{Index: 5, Hold: scenario.Duration(time.Second / 2), Faults: []scenario.Step{pause}}, score: 1, missed: map[int]bool{0: true}, hit: map[int]int{0: 1}}
	anchors := 0
	for i := range 200 {
		sc := g.mutate(parent, nil, rand.New(rand.NewPCG(9, uint64(i))), 100+i)
		if !strings.Contains(sc.Change, "anchor pause-client") {
			continue
		}
		anchors++
		if strings.Contains(sc.Change, "redraw") || strings.Contains(sc.Change, "drop") { // a second change undid it
			continue
		}
		j := slices.IndexFunc(sc.Faults, func(s scenario.Step) bool { return s.When != nil })
		if j < 0 {
			t.Fatalf("%s: no step waits for a moment: %s", sc.Change, sc.Describe())
		}
		st := sc.Faults[j]
		if st.When.Event != "read" || st.When.Client != 1 || st.Node != "" || st.Client != 1 || st.Within == 0 {
			t.Errorf("%s: anchored as %+v (when %+v), want a pause of client 1 at its next read", sc.Change, st, *st.When)
		}
		s := sc.Apply(base)
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", sc.Change, err)
		}
		if last := st.At.D() + st.Within.D() + st.For.D() + base.Lock.TTL.D(); s.Duration.D() < last {
			t.Errorf("%s: the trial lasts %v, ends before the latest heal and a lease (%v)", sc.Change, s.Duration, last)
		}
	}
	if anchors < 30 {
		t.Errorf("%d of 200 changes anchored the fault that missed the lock, want about %.0f", anchors, 200*onFocus*anchor)
	}
	// An anchored pause lasts at least 2 TTLs (the TTL is 2 s).
	for _, tc := range []struct{ was, want time.Duration }{
		{1200 * time.Millisecond, 4 * time.Second},
		{2220 * time.Millisecond, 4 * time.Second},
		{4500 * time.Millisecond, 4500 * time.Millisecond},
	} {
		short := parent
		short.sc.Faults = []scenario.Step{pause}
		short.sc.Faults[0].For = scenario.Duration(tc.was)
		if f := anchorOnce(t, g, short); f != tc.want {
			t.Errorf("the anchored %v pause lasts %v, want %v", tc.was, f, tc.want)
		}
	}
}

// anchorOnce returns how long the first change of parent that only
// anchors its pause makes it last.
func anchorOnce(t *testing.T, g *Generator, parent scored) time.Duration {
	t.Helper()
	for i := range 200 {
		sc := g.mutate(parent, nil, rand.New(rand.NewPCG(9, uint64(i))), 100+i)
		if sc.Change == "#5: anchor pause-client" || sc.Change == "#5: anchor pause-client, hold" {
			return sc.Faults[0].For.D()
		}
	}
	t.Fatal("no change of 200 only anchored the pause")
	return 0
}

// A client fault that met the lock is anchored too, less often than one
// that missed it: it may have come after the holder's write.
func TestMutate_AnchorsAClientFaultThatMet(t *testing.T) {
	g, _ := generator(t, "etcd-pause-holder", []string{"pause-client", "latency"})
	pause := scenario.Step{At: scenario.Duration(2 * time.Second), Fault: "pause-client", Node: scenario.AimHolder, For: scenario.Duration(3 * time.Second)}
	count := func(parent scored) int {
		n := 0
		for i := range 400 {
			if sc := g.mutate(parent, nil, rand.New(rand.NewPCG(9, uint64(i))), 100+i); strings.Contains(sc.Change, "anchor pause-client") {
				n++
			}
		}
		return n
	}
	sc := Schedule{Index: 5, Hold: scenario.Duration(time.Second / 2), Faults: []scenario.Step{pause}}
	met := count(scored{sc: sc, score: 1, met: map[int]bool{0: true}, hit: map[int]int{0: 2}})
	missed := count(scored{sc: sc, score: 1, missed: map[int]bool{0: true}, hit: map[int]int{0: 2}})
	unknown := count(scored{sc: sc, score: 1, met: map[int]bool{0: true}}) // no client recorded
	if met == 0 || met >= missed || unknown != 0 {
		t.Errorf("anchored %d of 400 changes of a met pause, %d of a missed one, %d without its client: want 0 < met < missed, and none", met, missed, unknown)
	}
}

// Fresh draws weigh the fault kinds by the closeness of their trials: a
// kind in close trials is drawn more, none below the floor, and before
// anything came close every kind alike.
func TestGuide_WeighsKinds(t *testing.T) {
	g, _ := generator(t, "etcd-pause-holder", []string{"pause-client", "latency", "kill"})
	gd := &guide{}
	if w := gd.weights(g.Kinds()); w != nil {
		t.Fatalf("weights before any trial = %v, want nil", w)
	}
	step := func(k string) []scenario.Step { return []scenario.Step{{Fault: k}} }
	for range 10 {
		gd.count(Schedule{Faults: step("pause-client")}, 1.5)
		gd.count(Schedule{Faults: step("latency")}, 0)
		gd.count(Schedule{Faults: step("kill")}, 0.1)
	}
	w := gd.weights(g.Kinds())
	if !(w[0] > 3*w[2] && w[2] >= w[1] && w[1] > 0) {
		t.Errorf("weights pause-client, latency, kill = %.2f, want pause-client far ahead and none 0", w)
	}
	n := 0
	for i := range 200 {
		for _, st := range g.schedule(1, i, w).Faults {
			if st.Fault == "pause-client" {
				n++
				break
			}
		}
	}
	if n < 120 {
		t.Errorf("%d of 200 weighted draws hold a pause-client, want most", n)
	}
}

// The warm-up is the random search's first schedules, then schedules
// drawing among the kinds they never drew, until every kind was drawn,
// each drawing at least one not drawn before.
func TestWarm_EveryKind(t *testing.T) {
	g, _ := generator(t, "zk-pause-holder", nil)
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		seen := map[string]bool{}
		for i := range warmup {
			for _, st := range g.Schedule(seed, i).Faults {
				seen[st.Fault] = true
			}
		}
		gd := &guide{cover: g.covering(seed), warmed: warmup}
		n := len(gd.cover)
		for i := warmup; len(gd.cover) > 0 || len(gd.held) > 0; i++ {
			sc := g.pick(seed, i, gd)
			if strings.Contains(sc.Change, "anchor") {
				continue // the anchor of a pause the next schedule drew
			}
			if sc.Index != i || sc.Change != "" {
				t.Errorf("seed %d: schedule %d is %d, %q: want the next covering one", seed, i, sc.Index, sc.Change)
			}
			for _, st := range sc.Faults {
				seen[st.Fault] = true
			}
		}
		if n == 0 || n > len(g.kinds) {
			t.Errorf("seed %d: %d covering schedules", seed, n)
		}
		for _, k := range g.kinds {
			if !seen[k] {
				t.Errorf("seed %d: the warm-up (%d schedules) never drew %s", seed, warmup+n, k)
			}
		}
	}
}

// A pause waiting to be anchored goes before the covering schedules.
func TestPick_AnchorsBeforeCovering(t *testing.T) {
	g, _ := generator(t, "zk-pause-holder", nil)
	gd := &guide{cover: g.covering(1), warmed: warmup}
	pause := scenario.Step{At: scenario.Duration(time.Second), Fault: "pause-client", Client: 1, For: scenario.Duration(time.Second)}
	kill := scenario.Step{At: scenario.Duration(time.Second), Fault: "kill", Node: "z2"}
	gd.toAnchor = []scored{{sc: Schedule{Index: 2, Faults: []scenario.Step{kill, pause}}, hit: map[int]int{1: 1}}}
	if sc := g.pick(1, warmup, gd); sc.Change != "#2: anchor pause-client alone" || len(sc.Faults) != 1 || sc.Faults[0].When == nil {
		t.Errorf("schedule %d: %q %s, want the anchor of schedule 2's pause alone", warmup, sc.Change, sc.Describe())
	}
	if sc := g.pick(1, warmup+1, gd); sc.Change != "" || len(sc.Faults) == 0 {
		t.Errorf("schedule %d: %q, want the first covering schedule", warmup+1, sc.Change)
	}
}
