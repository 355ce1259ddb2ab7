package trial

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
)

// A soakScript records constructed events into a soakLog, round by round,
// as the soak's clients would.
type soakScript struct {
	t     *testing.T
	log   *soakLog
	dir   *results.RunDir
	token int
}

func newSoakScript(t *testing.T, s scenario.Scenario) *soakScript {
	t.Helper()
	dir, err := results.Create(t.TempDir(), "soak")
	if err != nil {
		t.Fatal(err)
	}
	log, err := newSoakLog(dir, s.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(log.abort)
	return &soakScript{t: t, log: log, dir: dir}
}

const ms = int64(time.Millisecond)

// base is added to every time: a zero time is stamped by Record.
const base = 1000 * ms

// op records an operation of process p from call to ret (ms) with outcome typ.
func (sc *soakScript) op(p int, f string, typ checker.Type, call, ret int64, token string, valid int64) {
	sc.log.Record(checker.Event{Process: p, Type: checker.Invoke, F: f, Key: "lock", Token: token, Time: base + call*ms})
	e := checker.Event{Process: p, Type: typ, F: f, Key: "lock", Token: token, Time: base + ret*ms}
	if typ == checker.OK && f == checker.FAcquire {
		e.ValidUntil = base + valid*ms
	}
	sc.log.Record(e)
}

// hold records process p granted the lock at at (ms) for ttl and, if rel
// > 0, releasing it at rel.
func (sc *soakScript) hold(p int, at, ttl, rel int64) {
	sc.token++
	tok := "t" + string(rune('a'+sc.token))
	sc.op(p, checker.FAcquire, checker.OK, at, at+5, tok, at+ttl)
	if rel > 0 {
		sc.op(p, checker.FRelease, checker.OK, rel, rel+5, tok, 0)
	}
}

// fail records a failed acquire of process p at at (ms).
func (sc *soakScript) fail(p int, at int64) {
	sc.op(p, checker.FAcquire, checker.Fail, at, at+5, "", 0)
}

// round plays round k: begin, the events of play, end.
func (sc *soakScript) round(k int, startMs int64, play func()) {
	sc.log.begin(k, base+startMs*ms)
	play()
	sc.log.flush()
	sc.log.end(k, nil, nil, nil, false)
	sc.log.settle()
}

// close closes the log and returns its rounds and the anomalies reported.
func (sc *soakScript) close() ([]*soakRound, []SoakAnomaly) {
	var found []SoakAnomaly
	out, err := sc.log.close(time.Now(), func(a SoakAnomaly) { found = append(found, a) })
	if err != nil {
		sc.t.Fatal(err)
	}
	return out, found
}

func kinds(r checker.Result) map[checker.Kind]int { return r.Counts() }

// checkWindow checks round r's window as `lockpick check` does and wants
// the round's own counts.
func (sc *soakScript) checkWindow(r *soakRound) {
	sc.t.Helper()
	if r.window == "" {
		sc.t.Fatalf("round %d has no window", r.round)
	}
	res, _, err := checker.CheckFile(sc.dir.Path(filepath.Join(r.window, checker.HistoryFile)), sc.log.opt, time.Minute)
	if err != nil {
		sc.t.Fatal(err)
	}
	if got, want := kinds(res), kinds(r.check); !mapsEqualKinds(got, want) {
		sc.t.Errorf("lockpick check of round %d's window: %v; the soak: %v", r.round, got, want)
	}
}

func mapsEqualKinds(a, b map[checker.Kind]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	return true
}

var soakTestScenario = scenario.Scenario{Name: "soak-test", Clients: 2, Lock: scenario.Lock{Kind: "set-nx", Key: "lock", TTL: scenario.Duration(2 * time.Second)}}

// TestSoakLog_StarvationInALaterRound: process 2 is granted the lock in
// round 1, then fails for 3 s in round 2 while process 1 is granted it
// again and again. Each round is judged alone: round 2 starves, as
// `lockpick check` of its window says (one stream over the soak settled
// process 2 with its round-1 grant and never reported it).
func TestSoakLog_StarvationInALaterRound(t *testing.T) {
	sc := newSoakScript(t, soakTestScenario)
	sc.round(1, 0, func() { sc.hold(2, 0, 2000, 100) })
	sc.round(2, 10_000, func() {
		for i := int64(0); i < 4; i++ {
			at := 10_000 + i*1000
			sc.hold(1, at, 2000, at+900)
			sc.fail(2, at+300)
			sc.fail(2, at+600)
		}
	})
	out, found := sc.close()
	if len(out) != 2 {
		t.Fatalf("%d rounds, want 2", len(out))
	}
	if n := len(out[0].check.Anomalies); n != 0 {
		t.Errorf("round 1: %v; want no anomaly", out[0].check.Anomalies)
	}
	r2 := out[1]
	if kinds(r2.check)[checker.Starvation] != 1 || r2.observed != "starves" {
		t.Fatalf("round 2: %v, observed %s; want process 2's starvation", r2.check.Anomalies, r2.observed)
	}
	sc.checkWindow(r2)
	if len(found) != 1 || found[0].Round != 2 || found[0].Anomaly.Kind != checker.Starvation {
		t.Errorf("reported %+v; want round 2's starvation", found)
	}
}

// TestSoakLog_LivelockStaysInItsRound: in round 1 two processes keep each
// other out and nobody is granted the lock (a livelock, reported as
// starvation); round 2 grants it. Judged alone, round 1 stays a livelock
// (one stream over the soak turned it into a stuck lock once round 2
// granted the key).
func TestSoakLog_LivelockStaysInItsRound(t *testing.T) {
	sc := newSoakScript(t, soakTestScenario)
	sc.round(1, 0, func() {
		for at := int64(0); at < 3000; at += 300 {
			sc.fail(1, at)
			sc.fail(2, at+100)
		}
	})
	sc.round(2, 10_000, func() { sc.hold(1, 10_000, 2000, 10_500) })
	out, _ := sc.close()
	if len(out) != 2 {
		t.Fatalf("%d rounds, want 2", len(out))
	}
	r1 := out[0]
	if got := kinds(r1.check); got[checker.Starvation] != 1 || got[checker.StuckLock] != 0 ||
		!strings.Contains(r1.check.Anomalies[0].Message, "livelock") {
		t.Fatalf("round 1: %v; want a livelock (starvation), no stuck lock", r1.check.Anomalies)
	}
	sc.checkWindow(r1)
	if n := len(out[1].check.Anomalies); n != 0 {
		t.Errorf("round 2: %v; want none", out[1].check.Anomalies)
	}
}

// TestSoakLog_LastRoundAnomalyReported: the double grant of the soak's last
// round is proven when its check closes, at the soak's end; it is reported
// then, as every other round's is.
func TestSoakLog_LastRoundAnomalyReported(t *testing.T) {
	sc := newSoakScript(t, soakTestScenario)
	sc.round(1, 0, func() { sc.hold(1, 0, 2000, 100) })
	sc.round(2, 10_000, func() {
		sc.hold(1, 10_000, 5000, 0) // never released: its lease ends with the history
		sc.hold(2, 11_000, 5000, 0)
	})
	out, found := sc.close()
	if len(out) != 2 || kinds(out[1].check)[checker.DoubleGrant] != 1 {
		t.Fatalf("rounds %d, last %v; want round 2's double grant", len(out), out[len(out)-1].check.Anomalies)
	}
	if !slices.ContainsFunc(found, func(a SoakAnomaly) bool { return a.Round == 2 && a.Anomaly.Kind == checker.DoubleGrant }) {
		t.Errorf("reported %+v; want round 2's double grant", found)
	}
	sc.checkWindow(out[1])
}

// TestSoakStop_Tolerated: --stop-on-anomaly stops on an anomaly the
// scenario does not tolerate, never on one it does, and not once the
// rounds are over.
func TestSoakStop_Tolerated(t *testing.T) {
	stopped := 0
	st := &soakStop{on: true, tolerate: []string{"stuck-lock", "starvation"}, stop: func() { stopped++ }}
	st.found(checker.Anomaly{Kind: checker.StuckLock})
	st.found(checker.Anomaly{Kind: checker.Starvation})
	if stopped != 0 || st.why != "" {
		t.Fatalf("stopped on a tolerated anomaly (%q)", st.why)
	}
	st.found(checker.Anomaly{Kind: checker.DoubleGrant})
	st.found(checker.Anomaly{Kind: checker.DoubleGrant})
	if stopped != 1 || st.why != "anomaly" {
		t.Fatalf("stopped %d times (%q) on double grants; want once, anomaly", stopped, st.why)
	}
	late := &soakStop{on: true, stop: func() { stopped++ }}
	late.over()
	late.found(checker.Anomaly{Kind: checker.DoubleGrant})
	if late.why != "" {
		t.Errorf("an anomaly reported after the rounds stopped the soak")
	}
}

// TestRoundAt_AlignsEveryRound: with align_start, every round starts on
// the grid, also when it starts late (the round before took longer).
func TestRoundAt_AlignsEveryRound(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	every := 4300 * time.Millisecond
	for k, now := range []time.Time{start, start.Add(time.Second), start.Add(13*time.Second + 123*time.Millisecond)} {
		due := start.Add(time.Duration(k) * every)
		at := roundAt(due, now, time.Second)
		if at.Before(due) || at.Before(now) || at.Sub(later(due, now)) >= time.Second || at.Nanosecond() != 0 {
			t.Errorf("round %d due %v, now %v: starts %v; want the next second boundary", k+1, due, now, at)
		}
	}
	if at := roundAt(start.Add(every), start, 0); !at.Equal(start.Add(every)) {
		t.Errorf("without align_start: %v, want the due time", at)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestPeakOf: the peak is at least every memory sample.
func TestPeakOf(t *testing.T) {
	samples := []results.MemorySample{{RSSBytes: 30 << 20}, {RSSBytes: 34 << 20}, {RSSBytes: 32 << 20}}
	if got := peakOf(33<<20, samples); got != 34<<20 {
		t.Errorf("peak %d MB, want 34 (the highest sample)", got>>20)
	}
	if got := peakOf(40<<20, samples); got != 40<<20 {
		t.Errorf("peak %d MB, want 40 (getrusage's)", got>>20)
	}
}

// TestSoakLog_LostUpdatesCountedAsCheckDoes: a round in which two clients
// write the same value four times has four lost updates; the stream proves
// one and says only the whole history counts them, so the round is
// checked whole and counts what `lockpick check` of its window counts, and
// the check note says so.
func TestSoakLog_LostUpdatesCountedAsCheckDoes(t *testing.T) {
	sc := newSoakScript(t, soakTestScenario)
	rw := func(p int, f string, at, v int64) {
		sc.log.Record(checker.Event{Process: p, Type: checker.Invoke, F: f, Key: "counter", Value: writeValue(f, v), Time: base + at*ms})
		sc.log.Record(checker.Event{Process: p, Type: checker.OK, F: f, Key: "counter", Value: checker.IntValue(v), Time: base + (at+5)*ms})
	}
	var h checker.History
	sc.round(1, 0, func() {
		for i := int64(0); i < 4; i++ {
			at := i * 100
			rw(1, checker.FRead, at, i)
			rw(2, checker.FRead, at+10, i)
			rw(1, checker.FWrite, at+20, i+1)
			rw(2, checker.FWrite, at+30, i+1)
		}
		h = slices.Clone(sc.log.rounds[0].history)
	})
	out, _ := sc.close()
	whole := checker.Check(h, sc.log.opt).Counts()[checker.LostUpdate]
	st := checker.NewStream(sc.log.opt)
	for _, e := range h {
		if err := st.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	streamed, _ := st.Close()
	if whole <= streamed.Counts()[checker.LostUpdate] {
		t.Fatalf("the whole history has %d lost updates, the stream %d; want more in the whole", whole, streamed.Counts()[checker.LostUpdate])
	}
	if got := kinds(out[0].check)[checker.LostUpdate]; got != whole {
		t.Errorf("round 1 counts %d lost updates; want the whole round's %d", got, whole)
	}
	sc.checkWindow(out[0])
	if note := sc.log.checkNote(); !strings.Contains(note, "round 1 was checked whole") || !strings.Contains(note, "lost update") {
		t.Errorf("check note %q; want it to name round 1", note)
	}
}

// writeValue is the value an invoke of f carries: a write's, none for a read.
func writeValue(f string, v int64) []byte {
	if f == checker.FWrite {
		return checker.IntValue(v)
	}
	return nil
}

// TestSoakLog_CheckNoteNamesRounds: rounds checked whole for one reason
// share one note that names them.
func TestSoakLog_CheckNoteNamesRounds(t *testing.T) {
	l := &soakLog{}
	err := fmt.Errorf("%w: a lost update on %q: only the whole history explains it", checker.ErrNeedHistory, "counter")
	l.checkedWhole(2, err)
	l.checkedWhole(5, err)
	want := `rounds 2, 5 were checked whole, as lockpick check checks their windows (a lost update on "counter": only the whole history explains it)`
	if got := l.checkNote(); got != want {
		t.Errorf("check note %q, want %q", got, want)
	}
}
