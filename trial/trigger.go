package trial

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/scenario"
)

// A momentKey names a kind of moment, whatever its number.
type momentKey struct {
	event  string
	client int
}

// momentHold bounds how long a client's event waits for the fault its
// moment triggers to be injected.
const momentHold = 5 * time.Second

// A triggerLog is an event log that tells the steps waiting for a moment
// when it comes. It records the event first, then holds the client that
// recorded it until the faults the event triggers are injected: a fault
// triggered by an acquire is in place before the acquire's requests leave
// (an in-process client records the invoke before it sends anything).
type triggerLog struct {
	eventLog
	mu     sync.Mutex
	armed  []*moment
	counts map[momentKey]int // events of each kind of moment since reset
	hold   time.Duration     // how long a client waits for its moment's fault: momentHold
}

// withTriggers returns log with triggers; every client and the nemesis
// record through it.
func withTriggers(log eventLog) *triggerLog {
	return &triggerLog{eventLog: log, counts: map[momentKey]int{}, hold: momentHold}
}

// resetMoments starts counting the moments' events of log afresh, when a
// trial or a soak's round builds its nemesis.
func resetMoments(log eventLog) {
	if t, ok := log.(*triggerLog); ok {
		t.reset()
	}
}

// reset starts counting the moments' events afresh.
func (t *triggerLog) reset() {
	t.mu.Lock()
	clear(t.counts)
	t.mu.Unlock()
}

// A moment is one step waiting for its When.
type moment struct {
	when     scenario.When
	came     chan struct{} // closed when the moment came
	injected chan struct{} // closed once the step's fault is in (or will not be)
	once     sync.Once
	at       time.Time // when it came
}

// done lets the client that brought the moment go on.
func (m *moment) done() { m.once.Do(func() { close(m.injected) }) }

// Record records e and, if e is a moment some step waits for, waits until
// that step's fault is injected (at most momentHold).
func (t *triggerLog) Record(e checker.Event) checker.Event {
	e = t.eventLog.Record(e)
	t.mu.Lock()
	for _, ev := range []string{scenario.MomentAcquire, scenario.MomentGranted, scenario.MomentRead, scenario.MomentReleased} {
		if (scenario.When{Event: ev, Client: e.Process}).Counts(e) {
			t.counts[momentKey{ev, e.Process}]++
		}
	}
	var came []*moment
	t.armed = slices.DeleteFunc(t.armed, func(m *moment) bool {
		w := m.when
		if w.Is(e) && (w.Nth == 0 || t.counts[momentKey{w.Event, w.Client}] == w.Nth) {
			came = append(came, m)
			return true
		}
		return false
	})
	t.mu.Unlock()
	for _, m := range came {
		close(m.came)
	}
	if len(came) == 0 {
		return e
	}
	timer := time.NewTimer(t.hold)
	defer timer.Stop()
	for _, m := range came {
		select {
		case <-m.injected:
		case <-timer.C:
			return e
		}
	}
	return e
}

// arm starts waiting for w.
func (t *triggerLog) arm(w scenario.When) *moment {
	m := &moment{when: w, came: make(chan struct{}), injected: make(chan struct{})}
	t.mu.Lock()
	t.armed = append(t.armed, m)
	t.mu.Unlock()
	return m
}

// disarm stops waiting for m; it reports false if m came meanwhile.
func (t *triggerLog) disarm(m *moment) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.armed)
	t.armed = slices.DeleteFunc(t.armed, func(a *moment) bool { return a == m })
	return len(t.armed) < n
}

// await waits, from step i's due time, for its moment. It returns the
// moment, which the caller marks done once the fault is in, and whether it
// came; if it did not (the window closed, the trial ended), the step is
// recorded as missed, in the history and in its evidence.
func (m *nemesis) await(i int) (*moment, bool) {
	st := m.steps[i]
	tl, ok := m.rec.(*triggerLog)
	if !ok {
		m.missed(i, "the moment never came: this log tells no moments")
		return nil, false
	}
	mo := m.early[i]
	if mo == nil {
		mo = tl.arm(*st.When)
	}
	m.mu.Lock()
	due := m.record[i].At
	m.mu.Unlock()
	var window <-chan time.Time
	if st.Within > 0 {
		t := time.NewTimer(time.Until(m.start.Add(time.Duration(due*float64(time.Second)) + st.Within.D())))
		defer t.Stop()
		window = t.C
	}
	select {
	case <-mo.came:
		return mo, true
	case <-window:
	case <-m.runCtx.Done():
	}
	if !tl.disarm(mo) { // it came as the window closed
		<-mo.came
		return mo, true
	}
	until := "the end of the trial"
	if st.Within > 0 {
		until = fmt.Sprintf("+%.3fs", due+st.Within.D().Seconds())
	}
	m.missed(i, fmt.Sprintf("the moment never came: %s from +%.3fs to %s", st.When, due, until))
	return nil, false
}

// missed records why step i, waiting for its moment, never fired (the
// moment never came, or the trial ended in its delay), as a lone nemesis
// event and in the step's evidence, which makes the trial inconclusive.
func (m *nemesis) missed(i int, why string) {
	m.mu.Lock()
	desc, target := m.record[i].Desc, m.record[i].Target
	m.record[i].Missed = why
	m.mu.Unlock()
	m.rec.Record(checker.Event{Process: -1, Type: checker.Info, F: checker.FNemesis, Value: checker.TextValue(desc), Node: target, Error: why})
}

// injectAtMoment injects step i once its moment came (an aimed step's
// target is chosen then: the leader at the moment), lets the client that
// brought it go on as soon as the fault is in (at once for a fault whose
// inject takes seconds, scenario.SlowInject, or one that fires a delay
// after the moment: it is not held for them), and heals the step For after
// the fault fired.
func (m *nemesis) injectAtMoment(ctx context.Context, i int) {
	mo, ok := m.await(i)
	if !ok {
		return
	}
	came := time.Now()
	mo.at = came
	st := m.steps[i]
	held := !scenario.SlowInject(st.Fault) && st.When.Delay == 0
	if !held {
		mo.done()
	}
	m.mu.Lock()
	target := m.record[i].Target
	m.mu.Unlock()
	m.observe(target, "the moment came: "+st.When.String())
	if d := st.When.Delay.D(); d > 0 {
		if !sleep(m.runCtx, d) {
			m.missed(i, "the trial ended before the fault's delay after its moment did: "+st.When.String())
			return
		}
		came = time.Now()
	}
	m.mu.Lock()
	if held {
		m.moments[i] = mo
	}
	m.came[i] = came.Sub(m.start)
	m.mu.Unlock()
	if d := st.For.D(); d > 0 && !st.Aimed() {
		m.healLater(ctx, i, came.Sub(m.start)+d) // from the moment, as a scheduled step's from its time
	}
	m.inject(ctx, i) // an aimed step picks its target now, and its heal is due For after the moment
	mo.done()
}

// momentIn lets the client that brought step i's moment go on: its fault
// is in. A fault that took longer than the client was held for was not in
// place for what the client did next: the step records it, and the trial
// is inconclusive.
func (m *nemesis) momentIn(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mo := m.moments[i]
	if mo == nil {
		return
	}
	if hold := m.rec.(*triggerLog).hold; time.Since(mo.at) > hold {
		m.record[i].Late = fmt.Sprintf("its inject took %v; the client that brought the moment was held %v at most", time.Since(mo.at).Round(time.Millisecond), hold)
	}
	mo.done()
}
