package trial

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/scenario"
)

// sleeper starts a process a pause-client step can freeze, killed at the
// end of the test.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// procState returns the state letter of /proc/<pid>/stat ("S", "T", ...).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return rest[:1]
}

// momentNemesis returns a nemesis pausing client 1's process (pid) at the
// moment client 1 acquires, with the log its clients record through.
func momentNemesis(t *testing.T, pid int, within time.Duration) (*nemesis, *triggerLog) {
	t.Helper()
	log := withTriggers(checker.NewRecorder(monoNow))
	steps := []scenario.Step{{At: scenario.Duration(20 * time.Millisecond), Within: scenario.Duration(within), Fault: "pause-client", Client: 1,
		When: &scenario.When{Event: scenario.MomentAcquire, Client: 1}}}
	nem, err := newNemesis(&trialEnv{pids: map[int]int{1: pid}, clients: 2}, steps, log)
	if err != nil {
		t.Fatal(err)
	}
	return nem, log
}

// TestMoment_MissedMakesTrialInconclusive: a step whose moment never came
// in its window (client 1 never acquires; client 2's acquire and client
// 1's grant are not the moment) never fires, says so in the history, and
// the trial is inconclusive.
func TestMoment_MissedMakesTrialInconclusive(t *testing.T) {
	pid := sleeper(t)
	nem, log := momentNemesis(t, pid, 100*time.Millisecond)
	runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start, startMono := time.Now(), monoNow()
	go func() {
		time.Sleep(50 * time.Millisecond)
		log.Record(checker.Event{Process: 2, Type: checker.Invoke, F: checker.FAcquire, Key: "k"})
		log.Record(checker.Event{Process: 1, Type: checker.OK, F: checker.FAcquire, Key: "k"})
	}()
	nem.run(runCtx, context.Background(), rand.New(rand.NewPCG(1, 2)), start)
	nem.healAll(context.Background())
	if s := procState(t, pid); s == "T" {
		t.Fatalf("client 1's process was paused (state %s) though its moment never came", s)
	}
	faults, _ := nem.evidence()
	ev := evidence.Evaluate(evidence.Input{History: log.History(), Start: startMono, Faults: faults})
	want := "never fired: the moment never came: client 1 acquires from +0.020s to +0.120s"
	if ev.Conclusive || !strings.Contains(strings.Join(ev.Reasons, "\n"), want) {
		t.Fatalf("conclusive %v, reasons %q; want inconclusive with %q", ev.Conclusive, ev.Reasons, want)
	}
	if !historyHas(log.History(), "the moment never came") {
		t.Error("the history does not record the missed moment")
	}
}

// injectTakes50ms takes 50ms to be injected, then says so.
type injectTakes50ms struct{ in atomic.Bool }

func (f *injectTakes50ms) Inject(context.Context, *cluster.Node) error {
	time.Sleep(50 * time.Millisecond)
	f.in.Store(true)
	return nil
}

func (f *injectTakes50ms) Heal(context.Context, *cluster.Node) error { return nil }

// TestMoment_FaultInPlaceBeforeClientGoesOn: the client whose acquire is
// the moment is held until the fault is in, so the acquire's requests meet
// it: once Record returns, the fault's Inject has returned.
func TestMoment_FaultInPlaceBeforeClientGoesOn(t *testing.T) {
	nem, log := momentNemesis(t, sleeper(t), time.Second)
	f := &injectTakes50ms{}
	nem.faults[0] = f
	done, cancel := playUntilArmed(nem, log, 2*time.Second)
	defer cancel()
	log.Record(checker.Event{Process: 1, Type: checker.Invoke, F: checker.FAcquire, Key: "k"})
	in := f.in.Load()
	cancel()
	<-done
	if !in {
		t.Fatal("client 1 went on with its acquire before the fault its moment triggers was in")
	}
	faults, _ := nem.evidence()
	if f := faults[0]; f.Fired == nil || f.Missed != "" {
		t.Fatalf("fault %+v: want fired", f)
	}
}

// TestMoment_LateFaultMakesTrialInconclusive: a fault whose inject takes
// longer than the client that brought its moment is held was not in place
// for what the client did next: the step says so and the trial is
// inconclusive. Its heal, due For after the moment, is timed as a
// scheduled step's is.
func TestMoment_LateFaultMakesTrialInconclusive(t *testing.T) {
	nem, log := momentNemesis(t, sleeper(t), time.Second)
	log.hold = 10 * time.Millisecond
	nem.faults[0] = &injectTakes50ms{}
	nem.steps[0].For = scenario.Duration(100 * time.Millisecond)
	done, cancel := playUntilArmed(nem, log, time.Second)
	defer cancel()
	log.Record(checker.Event{Process: 1, Type: checker.Invoke, F: checker.FAcquire, Key: "k"})
	<-done
	faults, _ := nem.evidence()
	f := faults[0]
	if f.Fired == nil || !strings.Contains(f.Late, "held 10ms at most") {
		t.Fatalf("fault %+v: want fired, and late for its moment", f)
	}
	if f.HealDue == nil || f.Healed == nil {
		t.Errorf("fault %+v: want its heal due and done", f)
	}
	ev := evidence.Evaluate(evidence.Input{Faults: faults})
	if ev.Conclusive || !strings.Contains(strings.Join(ev.Reasons, "; "), "not in place in time") {
		t.Errorf("evidence %+v: want inconclusive, the fault not in place in time", ev)
	}
}

// TestMoment_SlowFaultDoesNotHoldClient: a fault whose inject takes
// seconds (a restart) fires at its moment without holding the client that
// brought it, which goes on at once; the fault is not late for it.
func TestMoment_SlowFaultDoesNotHoldClient(t *testing.T) {
	nem, log := momentNemesis(t, sleeper(t), time.Second)
	log.hold = 10 * time.Millisecond
	f := &injectTakes50ms{}
	nem.faults[0] = f
	nem.steps[0].Fault = "restart"
	done, cancel := playUntilArmed(nem, log, time.Second)
	defer cancel()
	log.Record(checker.Event{Process: 1, Type: checker.Invoke, F: checker.FAcquire, Key: "k"})
	if f.in.Load() {
		t.Error("client 1 was held until the restart was in")
	}
	<-done
	faults, _ := nem.evidence()
	if g := faults[0]; g.Fired == nil || g.Late != "" || !f.in.Load() {
		t.Fatalf("fault %+v (in %v): want fired, in, and not late", g, f.in.Load())
	}
}

// TestMoment_DelayFiresLaterWithoutHoldingClient: a step whose moment has
// a delay fires that long after the moment, without holding the client
// that brought it, and heals For after it fired; a trial that ends in the
// delay never fired the step, which says so.
func TestMoment_DelayFiresLaterWithoutHoldingClient(t *testing.T) {
	nem, log := momentNemesis(t, sleeper(t), time.Second)
	f := &injectTakes50ms{}
	nem.faults[0] = f
	nem.steps[0].When.Delay = scenario.Duration(200 * time.Millisecond)
	nem.steps[0].For = scenario.Duration(100 * time.Millisecond)
	done, cancel := playUntilArmed(nem, log, 2*time.Second)
	defer cancel()
	moment := time.Now()
	log.Record(checker.Event{Process: 1, Type: checker.Invoke, F: checker.FAcquire, Key: "k"})
	if f.in.Load() {
		t.Error("client 1 was held for a fault due 200ms after its moment")
	}
	<-done
	faults, _ := nem.evidence()
	g := faults[0]
	if g.Fired == nil || g.Missed != "" || g.Late != "" || g.HealDue == nil {
		t.Fatalf("fault %+v: want fired, healed, not late", g)
	}
	if fired := nem.start.Add(time.Duration(*g.Fired * float64(time.Second))); fired.Sub(moment) < 200*time.Millisecond {
		t.Errorf("fired %v after the moment, want at least its 200ms delay", fired.Sub(moment))
	}
	if d := *g.HealDue - *g.Fired; d < 0.09 || d > 0.11 {
		t.Errorf("heal due %.3fs after it fired, want its for, 0.1s", d)
	}

	nem, log = momentNemesis(t, sleeper(t), time.Second)
	nem.steps[0].When.Delay = scenario.Duration(time.Hour)
	done, cancel = playUntilArmed(nem, log, 300*time.Millisecond)
	defer cancel()
	log.Record(checker.Event{Process: 1, Type: checker.Invoke, F: checker.FAcquire, Key: "k"})
	<-done
	faults, _ = nem.evidence()
	if g := faults[0]; g.Fired != nil || !strings.Contains(g.Missed, "the trial ended before the fault's delay") {
		t.Fatalf("fault %+v: want never fired, the trial over in its delay", g)
	}
}

// TestMoment_DueAtStartArmedBeforeClients: a step due at the start waits
// for its moment from when the nemesis is built, so the event of a client
// quicker than the schedule's goroutine (an isolated client reads within a
// millisecond of the start) is its moment, not a miss.
func TestMoment_DueAtStartArmedBeforeClients(t *testing.T) {
	pid := sleeper(t)
	log := withTriggers(checker.NewRecorder(monoNow))
	steps := []scenario.Step{{Within: scenario.Duration(time.Second), Fault: "pause-client", Client: 1, For: scenario.Duration(50 * time.Millisecond),
		When: &scenario.When{Event: scenario.MomentRead, Client: 1}}}
	nem, err := newNemesis(&trialEnv{pids: map[int]int{1: pid}, clients: 2}, steps, log)
	if err != nil {
		t.Fatal(err)
	}
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		log.Record(checker.Event{Process: 1, Type: checker.OK, F: checker.FRead, Key: "counter"})
	}()
	for len(log.History()) == 0 { // the read is in the log before the schedule runs
		time.Sleep(time.Millisecond)
	}
	runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	nem.run(runCtx, context.Background(), rand.New(rand.NewPCG(1, 2)), time.Now())
	nem.healAll(context.Background())
	<-recorded
	faults, _ := nem.evidence()
	if f := faults[0]; f.Fired == nil || f.Missed != "" {
		t.Fatalf("fault %+v: want fired at the read recorded before the schedule ran", f)
	}
}

// playUntilArmed plays nem's schedule for at most d and returns once its
// step waits for its moment; done closes when the play ends.
func playUntilArmed(nem *nemesis, log *triggerLog, d time.Duration) (done <-chan struct{}, cancel func()) {
	runCtx, cancel := context.WithTimeout(context.Background(), d)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		nem.run(runCtx, context.Background(), rand.New(rand.NewPCG(1, 2)), time.Now())
	}()
	for armed := false; !armed; time.Sleep(time.Millisecond) {
		log.mu.Lock()
		armed = len(log.armed) == 1
		log.mu.Unlock()
	}
	return ended, cancel
}

func historyHas(h checker.History, text string) bool {
	for _, e := range h {
		if e.F == checker.FNemesis && strings.Contains(e.Error, text) {
			return true
		}
	}
	return false
}

// TestMoment_Nth: a moment with nth comes at the client's nth event of its
// kind since the counts were reset, not at the first one from At; a
// release whose outcome is unknown counts (it ended a hold), though only
// one that returned ok is the moment.
func TestMoment_Nth(t *testing.T) {
	log := withTriggers(checker.NewRecorder(monoNow))
	release := checker.Event{Process: 1, Type: checker.OK, F: checker.FRelease, Key: "k"}
	log.Record(release) // before the reset: not counted
	resetMoments(log)
	mo := log.arm(scenario.When{Event: scenario.MomentReleased, Client: 1, Nth: 2})
	go func() { <-mo.came; mo.done() }()
	log.Record(checker.Event{Process: 2, Type: checker.OK, F: checker.FRelease, Key: "k"}) // another client's
	unknown := release
	unknown.Type = checker.Info // its reply lost: it still ended client 1's 1st hold
	log.Record(unknown)
	select {
	case <-mo.came:
		t.Fatal("the moment came at client 1's 1st release, want its 2nd")
	default:
	}
	log.Record(release)
	select {
	case <-mo.came:
	default:
		t.Fatal("the moment did not come at client 1's 2nd release")
	}
}
