package checker_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/checker/checkertest"
)

// stream feeds h to a Stream and closes it.
func stream(h checker.History, opt *checker.Options) (checker.Result, error) {
	s := checker.NewStream(opt)
	for i, e := range h {
		if err := s.Add(e); err != nil {
			break
		}
		if i == len(h)/2 {
			s.Decide()
			if n := len(s.Prevented()); n > len(checker.Check(h, opt).Prevented) {
				return checker.Result{}, fmt.Errorf("Prevented lists %d halfway, more than Check finds in all", n)
			}
		}
	}
	res, err := s.Close()
	same := slices.EqualFunc(s.Prevented(), res.Prevented, func(a, b checker.Anomaly) bool { return slices.Equal(a.Ops, b.Ops) })
	if err == nil && !same {
		err = fmt.Errorf("Prevented after Close lists %v, Close %v", s.Prevented(), res.Prevented)
	}
	return res, err
}

// sameAsCheck checks that a Stream gives h the result Check gives, or says
// it cannot; then CheckFile must give Check's result anyway. It returns
// whether the stream gave the result alone, and the result.
func sameAsCheck(t *testing.T, name string, h checker.History, opt *checker.Options) (streamed bool, want checker.Result) {
	t.Helper()
	want = checker.Check(h, opt)
	got, err := stream(h, opt)
	if err != nil {
		if !errors.Is(err, checker.ErrNeedHistory) && !errors.Is(err, checker.ErrTimeOrder) {
			t.Errorf("%s: Close: %v", name, err)
		}
		if errors.Is(err, checker.ErrNeedHistory) && !slices.Equal(lostKeys(got), lostKeys(want)) {
			t.Errorf("%s: the counter rule finds lost updates on %q, the counter model on %q", name, lostKeys(got), lostKeys(want))
		}
		path := filepath.Join(t.TempDir(), "h.jsonl")
		if err := checker.WriteFile(path, h); err != nil {
			t.Fatal(err)
		}
		res, sum, err := checker.CheckFile(path, opt, 0)
		if err != nil {
			t.Fatalf("%s: CheckFile: %v", name, err)
		}
		switch {
		case sum.Fallback == nil && errors.Is(err, checker.ErrNeedHistory):
			t.Errorf("%s: CheckFile streamed a history the stream could not check alone", name)
		case sum.Fallback == nil && sum.Reorder < sum.Lateness:
			t.Errorf("%s: CheckFile streamed a history out of order by %s in a window of %s", name, sum.Lateness, sum.Reorder)
		}
		// The file goes through JSON: compare it with Check of what it holds.
		back, err := checker.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		diff(t, name+" (CheckFile)", res, checker.Check(back, opt))
		return false, want
	}
	diff(t, name, got, want)
	return true, want
}

// lostKeys returns the keys with a lost update in r.
func lostKeys(r checker.Result) []string {
	var keys []string
	for _, a := range r.Anomalies {
		if a.Kind == checker.LostUpdate && !slices.Contains(keys, a.Key) {
			keys = append(keys, a.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

func diff(t *testing.T, name string, got, want checker.Result) {
	t.Helper()
	got.Elapsed, want.Elapsed = 0, 0
	if reflect.DeepEqual(got, want) {
		return
	}
	t.Errorf("%s: the stream's result differs from Check's", name)
	for i := 0; i < max(len(got.Anomalies), len(want.Anomalies)); i++ {
		var g, w checker.Anomaly
		if i < len(got.Anomalies) {
			g = got.Anomalies[i]
		}
		if i < len(want.Anomalies) {
			w = want.Anomalies[i]
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("anomaly %d:\n stream %+v\n check  %+v", i, g, w)
			break
		}
	}
	if !reflect.DeepEqual(got.Prevented, want.Prevented) {
		t.Errorf("prevented:\n stream %+v\n check  %+v", got.Prevented, want.Prevented)
	}
	if got.Verdict != want.Verdict || got.Ignored != want.Ignored || got.Origin != want.Origin || !reflect.DeepEqual(got.TimedOut, want.TimedOut) {
		t.Errorf("stream %s ignored %d origin %d timed out %v; check %s ignored %d origin %d timed out %v",
			got.Verdict, got.Ignored, got.Origin, got.TimedOut, want.Verdict, want.Ignored, want.Origin, want.TimedOut)
	}
}

// options are the option sets every history is checked with.
var options = []*checker.Options{
	nil,
	{StuckAfter: time.Millisecond, StarveAfter: time.Millisecond, MaxTTL: time.Millisecond},
	{StuckAfter: time.Millisecond, StarveAfter: time.Millisecond},
	{MaxTTL: 5 * time.Millisecond},
	{StuckAfter: -1, StarveAfter: -1, MaxTTL: time.Second},
}

func TestStream_SameAsCheckOnTestdata(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	more, _ := filepath.Glob("../cmd/lockpick/testdata/*.jsonl")
	defer checker.SetAdvanceEvery(1)()
	streamed, total := 0, 0
	for _, f := range append(files, more...) {
		h, err := checker.ReadFile(f)
		if err != nil {
			continue // malformed on purpose
		}
		for i, opt := range options {
			checker.SetAdvanceEvery(1 + i%2)
			total++
			if ok, _ := sameAsCheck(t, fmt.Sprintf("%s, options %d", f, i), h, opt); ok {
				streamed++
			}
		}
	}
	t.Logf("%d of %d checks streamed alone, the rest fell back", streamed, total)
	if streamed < total/2 {
		t.Errorf("only %d of %d checks streamed alone", streamed, total)
	}
}

// TestStream_SameAsCheckOnGenerated compares the stream with Check on
// generated histories with every fault of checkertest, and on the same
// histories mutated: events dropped (operations that never complete,
// completions without invoke), deadlines and tokens removed, watchdog
// renewals added, values changed, grant numbers removed, and two events
// swapped out of time order. Some number their grants, and some hand every
// holder one token.
func TestStream_SameAsCheckOnGenerated(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	defer checker.SetAdvanceEvery(512)()
	kinds := make(map[checker.Kind]int) // anomalies in histories the stream checked alone
	streamed, total, prevented := 0, 0, 0
	for seed := range uint64(seeds) {
		w := checkertest.Options{Processes: 2 + int(seed%7), Keys: 1 + int(seed%3), Events: 300 + int(seed%5)*400,
			TTL: 50 * time.Millisecond, Seed: seed, UnknownRate: 0.04 * float64(seed%2+seed%5%2)}
		switch seed % 4 {
		case 1: // leases expire while held
			w.TTL, w.PauseRate, w.Fenced = time.Duration(2+seed%3)*time.Millisecond, 0.1, seed%8 == 1
		case 2:
			w.BrokenRate = 0.02
			if seed%3 == 0 { // a lock handing every holder one token
				w.Token = "1"
			}
		}
		w.Grants = seed%5 < 3
		h := checkertest.Generate(&w)
		rng := rand.New(rand.NewPCG(seed, 7))
		checker.SetAdvanceEvery([]int{1, 7, 512}[seed%3]) // decide at every event, or seldom
		for i, hh := range []checker.History{h, mutate(h, rng, false), mutate(h, rng, true)} {
			opt := options[int(seed+uint64(i))%len(options)]
			total++
			ok, res := sameAsCheck(t, fmt.Sprintf("seed %d, history %d, %+v", seed, i, w), hh, opt)
			if ok {
				streamed++
				for k, n := range res.Counts() {
					kinds[k] += n
				}
				prevented += len(res.Prevented)
			}
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d of %d histories streamed alone, with anomalies %v and %d prevented", streamed, total, kinds, prevented)
	for _, k := range []checker.Kind{checker.DoubleGrant, checker.SharedToken, checker.StaleWrite, checker.StuckLock, checker.Starvation} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the histories the stream checked alone: the comparison proves little", k)
		}
	}
	if prevented == 0 || streamed < total/3 {
		t.Errorf("%d of %d histories streamed alone, %d prevented stale writes", streamed, total, prevented)
	}
}

// mutate returns a copy of h with some events dropped or changed, and
// renewals added; swap also swaps two events out of time order.
func mutate(h checker.History, rng *rand.Rand, swap bool) checker.History {
	var out checker.History
	values := rng.IntN(3) == 0 // change values: lost updates
	for _, e := range h {
		switch r := rng.Float64(); {
		case r < 0.01 && (values || e.F != checker.FWrite):
			continue // dropped
		case r < 0.02 && e.F == checker.FAcquire && e.Type == checker.OK:
			e.ValidUntil = 0
		case r < 0.04 && e.F == checker.FAcquire && e.Type == checker.OK:
			e.Token = ""
		case r < 0.042 && e.Grant != 0:
			e.Grant = 0 // a history from elsewhere may number some events only
		case r < 0.045 && e.F == checker.FWrite && values:
			e.Value = checker.IntValue(rng.Int64N(5))
		case r < 0.08 && e.F == checker.FAcquire && e.Type == checker.OK:
			// a renewal, maybe after the lease expired, maybe failed
			out = append(out, e)
			e = checker.Event{Process: e.Process, Type: checker.Invoke, F: checker.FExtend, Key: e.Key, Token: e.Token, Grant: e.Grant, Time: e.Time}
			out = append(out, e)
			e.Type = []checker.Type{checker.OK, checker.OK, checker.Fail, checker.Info}[rng.IntN(4)]
			if e.Type == checker.OK {
				e.ValidUntil = e.Time + rng.Int64N(4_000_000)
			}
			if rng.IntN(4) == 0 {
				continue // never completes
			}
		}
		out = append(out, e)
	}
	if swap && len(out) > 2 {
		i := rng.IntN(len(out) - 1)
		for j := i + 1; j < len(out); j++ {
			if out[j].Time > out[i].Time {
				out[i], out[j] = out[j], out[i]
				break
			}
		}
	}
	for i := range out {
		out[i].Index = i
	}
	return out
}

func TestStream_TimeOrder(t *testing.T) {
	h := readHistory(t, "double-grant.jsonl")
	h[2].Time, h[3].Time = h[3].Time, h[2].Time
	late := time.Duration(h[2].Time - h[3].Time)
	s := checker.NewStream(&checker.Options{Reorder: late - 1})
	var err error
	for _, e := range h {
		if err = s.Add(e); err != nil {
			break
		}
	}
	if !errors.Is(err, checker.ErrTimeOrder) {
		t.Fatalf("Add = %v, want ErrTimeOrder", err)
	}
	if _, cerr := s.Close(); !errors.Is(cerr, checker.ErrTimeOrder) {
		t.Errorf("Close = %v, want ErrTimeOrder", cerr)
	}
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := checker.WriteFile(path, h); err != nil {
		t.Fatal(err)
	}
	// Given the window, CheckFile falls back; else it widens the window.
	res, sum, err := checker.CheckFile(path, &checker.Options{Reorder: late - 1}, 0)
	if err != nil || !errors.Is(sum.Fallback, checker.ErrTimeOrder) {
		t.Fatalf("CheckFile: %v, fallback %v; want a fallback for time order", err, sum.Fallback)
	}
	if got, want := sum.Lateness, late; got != want {
		t.Errorf("lateness = %s, want %s", got, want)
	}
	diff(t, "CheckFile", res, checker.Check(h, &checker.Options{Reorder: late - 1}))
	res, sum, err = checker.CheckFile(path, nil, 0)
	if err != nil || sum.Fallback != nil || sum.Reorder != late || !strings.Contains(sum.Path(), "streamed") {
		t.Fatalf("CheckFile: %v, %s, window %s; want it streamed in a window of %s", err, sum.Path(), sum.Reorder, late)
	}
	diff(t, "CheckFile", res, checker.Check(h, nil))
	// Further out of order than MaxReorder, it is checked whole.
	h[3].Time = h[2].Time - int64(checker.MaxReorder) - 1
	if err := checker.WriteFile(path, h); err != nil {
		t.Fatal(err)
	}
	res, sum, err = checker.CheckFile(path, nil, 0)
	if err != nil || !errors.Is(sum.Fallback, checker.ErrTimeOrder) || !strings.Contains(sum.Path(), "whole") {
		t.Fatalf("CheckFile: %v, %s; want a fallback for time order", err, sum.Path())
	}
	diff(t, "CheckFile", res, checker.Check(h, nil))
}

func TestCheckFile(t *testing.T) {
	res, sum, err := checker.CheckFile(filepath.Join("testdata", "double-grant.jsonl"), nil, time.Minute)
	if err != nil || sum.Fallback != nil {
		t.Fatalf("CheckFile: %v, fallback %v", err, sum.Fallback)
	}
	if got, want := res.Counts()[checker.DoubleGrant], 1; got != want {
		t.Errorf("double grants = %d, want %d", got, want)
	}
	h := readHistory(t, "double-grant.jsonl")
	if got, want := sum.Events, len(h); got != want {
		t.Errorf("events = %d, want %d", got, want)
	}
	if sum.Grant == nil || sum.Grant.Type != checker.OK || sum.Grant.F != checker.FAcquire {
		t.Errorf("grant = %+v, want the last ok acquire", sum.Grant)
	}

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"index\":0,\"process\":1,\"type\":\"invoke\",\"f\":\"acquire\",\"time\":1}\n{\"index\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var perr *checker.ParseError
	if _, _, err := checker.CheckFile(bad, nil, 0); !errors.As(err, &perr) || perr.Line != 2 || !strings.Contains(err.Error(), bad) {
		t.Errorf("CheckFile of a malformed file = %v, want line 2 of %s", err, bad)
	}
	if _, _, err := checker.CheckFile(t.TempDir(), nil, 0); !errors.Is(err, checker.ErrNoHistory) {
		t.Errorf("CheckFile of an empty folder = %v, want ErrNoHistory", err)
	}
}

// TestStream_Anomalies checks that what a stream reports as it goes stays in
// its final result.
func TestStream_Anomalies(t *testing.T) {
	w := checkertest.Options{Processes: 6, Keys: 2, Events: 20_000, TTL: 5 * time.Millisecond, BrokenRate: 0.02, PauseRate: 0.05, Seed: 3}
	s := checker.NewStream(nil)
	var sofar []checker.Anomaly
	for i, e := range checkertest.Generate(&w) {
		if err := s.Add(e); err != nil {
			t.Fatal(err)
		}
		if i == 10_000 {
			sofar = s.Anomalies()
		}
	}
	res, _ := s.Close()
	if len(sofar) == 0 {
		t.Fatal("no anomaly found halfway")
	}
	for _, a := range sofar {
		if !slices.ContainsFunc(res.Anomalies, func(b checker.Anomaly) bool { return reflect.DeepEqual(a, b) }) {
			t.Errorf("anomaly found halfway is not in the result: %s", a.Message)
		}
	}
}

// TestStream_LearnsMaxTTL checks histories where MaxTTL, not set, is
// learned only after the stuck-lock check needed it: the stream must say
// so (and CheckFile fall back) or give Check's result anyway.
func TestStream_LearnsMaxTTL(t *testing.T) {
	ev := func(p int, typ checker.Type, f string, ms int64) checker.Event {
		return checker.Event{Process: p, Type: typ, F: f, Key: "lock", Time: ms * 1e6}
	}
	grant := ev(3, checker.OK, checker.FAcquire, 9000)
	grant.ValidUntil, grant.Token = grant.Time+5000e6, "t3" // a 5 s lease, learned late
	h := checker.History{
		ev(1, checker.Invoke, checker.FAcquire, 0), ev(1, checker.Info, checker.FAcquire, 1),
		ev(2, checker.Invoke, checker.FAcquire, 10), ev(2, checker.Fail, checker.FAcquire, 11),
		ev(2, checker.Invoke, checker.FAcquire, 3000), ev(2, checker.Fail, checker.FAcquire, 3001),
		ev(2, checker.Invoke, checker.FAcquire, 6000), ev(2, checker.Fail, checker.FAcquire, 6001),
		ev(3, checker.Invoke, checker.FAcquire, 8999), grant,
	}
	for i := range h {
		h[i].Index = i
	}
	defer checker.SetAdvanceEvery(1)()
	for i := range 2 {
		if i == 1 { // learned in time: a short lease first
			h[9].ValidUntil = h[9].Time + 1e6
		}
		_, err := stream(h, nil)
		if i == 0 && !errors.Is(err, checker.ErrNeedHistory) {
			t.Errorf("history %d: Close = %v, want ErrNeedHistory", i, err)
		}
		sameAsCheck(t, fmt.Sprint("history ", i), h, nil)
	}
}

// TestStream_FlatMemory checks that what a stream holds does not grow with
// the length of the history.
func TestStream_FlatMemory(t *testing.T) {
	w := checkertest.Options{Processes: 16, Keys: 4, Events: 400_000, TTL: time.Second, UnknownRate: 0.01, Seed: 5}
	s := checker.NewStream(nil)
	bar, most := 0, 0 // the most held in the first 100k events, and in all
	for i, e := range checkertest.Generate(&w) {
		if err := s.Add(e); err != nil {
			t.Fatal(err)
		}
		if i%10_000 == 0 {
			n := checker.Retained(s)
			if i <= 100_000 {
				bar = max(bar, n)
			} else if n > 2*bar+100 {
				t.Fatalf("after %d events the stream holds %d items; at most %d in the first 100k", i, n, bar)
			}
			most = max(most, n)
		}
	}
	if res, err := s.Close(); err != nil || res.Verdict != checker.Ok {
		t.Errorf("verdict %s, %v", res.Verdict, err)
	}
	t.Logf("the stream held at most %d items", most)
}

// retainedCurve streams the events each emits and returns what the stream
// holds (checker.Retained) after deciding, every step events.
func retainedCurve(t *testing.T, each func(emit func(checker.Event)), step int) []int {
	t.Helper()
	s := checker.NewStream(nil)
	var curve []int
	each(func(e checker.Event) {
		if err := s.Add(e); err != nil {
			t.Fatal(err)
		}
		if s.Events()%step == 0 {
			s.Decide()
			curve = append(curve, checker.Retained(s))
		}
	})
	if res, err := s.Close(); err != nil || res.Verdict != checker.Ok {
		t.Errorf("verdict %s, %v: %v", res.Verdict, err, res.Counts())
	}
	return curve
}

// flatCurve fails unless what a stream held over the last three quarters
// of curve stays within a factor 1.5 (and a little) of the most it held in
// the first quarter: with what is open bounded, nothing may grow with the
// history.
func flatCurve(t *testing.T, curve []int) {
	t.Helper()
	q := len(curve) / 4
	bar := slices.Max(curve[:q])
	for i, n := range curve[q:] {
		if n > bar+bar/2+20 {
			t.Fatalf("at checkpoint %d of %d the stream holds %d items; at most %d in the first quarter: %v", q+i+1, len(curve), n, bar, curve)
		}
	}
	t.Logf("held %d items at most in the first quarter, %d after", bar, slices.Max(curve[q:]))
}

// TestStream_FlatMemoryUnknownWrites checks that the counter rule's sets
// of values do not grow with the history: every write whose outcome is
// unknown, and took effect, leaves a value no ok write wrote.
func TestStream_FlatMemoryUnknownWrites(t *testing.T) {
	w := checkertest.Options{Processes: 16, Keys: 4, Events: 400_000, TTL: 60 * time.Second, CleanUp: true, UnknownRate: 0.05, Seed: 5}
	flatCurve(t, retainedCurve(t, func(emit func(checker.Event)) { checkertest.Each(&w, emit) }, 10_000))
}

// watchdog emits a history of rounds renewals: process 0 holds "lock" for
// ever, its watchdog renewing it every 100ms for a second, and increments
// "counter" under it while process 1 tries the lock and fails. With
// steal, process 1's last try is granted: a double grant.
func watchdog(rounds int, steal bool, emit func(checker.Event)) {
	const ms = int64(time.Millisecond)
	i := 0
	ev := func(p int, typ checker.Type, f, key string, at int64) checker.Event {
		i++
		return checker.Event{Index: i - 1, Process: p, Type: typ, F: f, Key: key, Token: fmt.Sprint("t", p), Time: at}
	}
	valid := func(e checker.Event) checker.Event { e.ValidUntil = e.Time + 1000*ms; return e }
	value := func(e checker.Event, v int) checker.Event { e.Value = []byte(fmt.Sprint(v)); return e }
	emit(ev(0, checker.Invoke, checker.FAcquire, "lock", 0))
	emit(valid(ev(0, checker.OK, checker.FAcquire, "lock", ms)))
	for r := range rounds {
		at := int64(r+1) * 100 * ms
		emit(ev(0, checker.Invoke, checker.FExtend, "lock", at))
		emit(valid(ev(0, checker.OK, checker.FExtend, "lock", at+ms)))
		emit(ev(0, checker.Invoke, checker.FRead, "counter", at+2*ms))
		emit(value(ev(0, checker.OK, checker.FRead, "counter", at+3*ms), r))
		emit(value(ev(0, checker.Invoke, checker.FWrite, "counter", at+4*ms), r+1))
		emit(ev(0, checker.OK, checker.FWrite, "counter", at+5*ms))
		emit(ev(1, checker.Invoke, checker.FAcquire, "lock", at+6*ms))
		if steal && r == rounds-1 {
			emit(valid(ev(1, checker.OK, checker.FAcquire, "lock", at+7*ms)))
		} else {
			emit(ev(1, checker.Fail, checker.FAcquire, "lock", at+7*ms))
		}
	}
}

// TestStream_FlatMemoryWatchdog checks that a lease renewed for the whole
// history keeps what a stream holds flat: an anomaly cites the first and
// the last ten of its renewals, so the rest are let go.
func TestStream_FlatMemoryWatchdog(t *testing.T) {
	flatCurve(t, retainedCurve(t, func(emit func(checker.Event)) { watchdog(40_000, false, emit) }, 8_000))

	var h checker.History
	watchdog(50, true, func(e checker.Event) { h = append(h, e) })
	_, res := sameAsCheck(t, "watchdog", h, nil)
	if len(res.Anomalies) != 1 || res.Anomalies[0].Kind != checker.DoubleGrant {
		t.Fatalf("anomalies %v, want one double grant", res.Counts())
	}
	var extends []int
	for _, i := range res.Anomalies[0].Ops {
		if h[i].F == checker.FExtend {
			extends = append(extends, i)
		}
	}
	var want []int
	for r := range 50 {
		if r < 10 || r >= 40 {
			want = append(want, 2+8*r, 3+8*r) // the renewal's invoke and ok
		}
	}
	if !slices.Equal(extends, want) {
		t.Errorf("the double grant cites renewals %v, want the first and the last ten %v", extends, want)
	}
}

// TestStream_NeedHistoryReasons checks that a stream gives the first few
// reasons it needs the whole history, not one per event.
func TestStream_NeedHistoryReasons(t *testing.T) {
	s := checker.NewStream(nil)
	for i := range 100 {
		at := int64(i) * 1000
		for j, e := range []checker.Event{
			{Process: 1, Type: checker.Invoke, F: checker.FRead, Key: "counter", Time: at + 5},
			{Process: 1, Type: checker.OK, F: checker.FRead, Key: "counter", Value: checker.IntValue(0), Time: at},
		} {
			e.Index = 2*i + j
			if err := s.Add(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := s.Close()
	if !errors.Is(err, checker.ErrNeedHistory) {
		t.Fatalf("Close = %v, want ErrNeedHistory", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "operation 0 completed before it was invoked") || strings.Contains(msg, "operation 198") ||
		!strings.HasSuffix(msg, " and others") || strings.Count(msg, "completed before") != 8 {
		t.Errorf("Close = %v; want the first 8 reasons and others", err)
	}
}
