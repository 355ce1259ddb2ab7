package checker_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/checker/checkertest"
)

// shuffle returns h with its lines shuffled within window, as recorders of
// their own processes writing to one file would: each event moves behind
// any event up to window after it, so none comes more than window before
// an event on an earlier line, but each process's events keep their order.
// Indexes follow the new lines.
func shuffle(h checker.History, rng *rand.Rand, window time.Duration) checker.History {
	type moved struct {
		e   checker.Event
		key int64
	}
	ms := make([]moved, len(h))
	last := make(map[int]int64)
	for i, e := range h {
		k := e.Time + rng.Int64N(int64(window)+1)
		if l, ok := last[e.Process]; ok {
			k = max(k, l)
		}
		last[e.Process] = k
		ms[i] = moved{e, k}
	}
	slices.SortStableFunc(ms, func(a, b moved) int { return cmp.Compare(a.key, b.key) })
	out := make(checker.History, len(ms))
	for i, m := range ms {
		out[i] = m.e
		out[i].Index = i
	}
	return out
}

// TestStream_SameAsCheckShuffled compares the stream, in a window as wide
// as the disorder, with Check on generated histories, mutated or not, with
// short and long (60s) leases, shuffled within windows from 5ns to 10ms:
// an operation's invoke and its completion may change places.
func TestStream_SameAsCheckShuffled(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 16
	}
	defer checker.SetAdvanceEvery(512)()
	windows := []time.Duration{5, 50 * time.Microsecond, time.Millisecond, 10 * time.Millisecond}
	kinds := make(map[checker.Kind]int)
	streamed, total := 0, 0
	for seed := range uint64(seeds) {
		w := checkertest.Options{Processes: 2 + int(seed%7), Keys: 1 + int(seed%3), Events: 400 + int(seed%5)*400,
			TTL: 50 * time.Millisecond, Seed: seed, UnknownRate: 0.04 * float64(seed%2+seed%5%2)}
		switch seed % 4 {
		case 1:
			w.TTL, w.PauseRate, w.Fenced = time.Duration(2+seed%3)*time.Millisecond, 0.1, seed%8 == 1
		case 2:
			w.BrokenRate, w.Grants = 0.02, seed%3 != 0
			if seed%3 == 1 { // every holder has one token
				w.Token = "1"
			}
		case 3: // long leases, released after an unknown acquire; holders that crash
			w.TTL, w.CleanUp, w.UnknownRate, w.Crash = time.Minute, true, 0.02, int(seed%3)
		default: // holders that crash, their leases expiring unreleased
			w.Crash = int(seed % 8 / 4)
		}
		rng := rand.New(rand.NewPCG(seed, 11))
		checker.SetAdvanceEvery([]int{1, 7, 512}[seed%3])
		h := checkertest.Generate(&w)
		for i, hh := range []checker.History{h, mutate(h, rng, false)} {
			win := windows[int(seed+uint64(i))%len(windows)]
			opt := options[int(seed+uint64(i))%len(options)]
			o := checker.Options{Reorder: win}
			if opt != nil {
				o = *opt
				o.Reorder = win
			}
			total++
			ok, res := sameAsCheck(t, fmt.Sprintf("seed %d, history %d shuffled within %s, %+v", seed, i, win, w), shuffle(hh, rng, win), &o)
			if ok {
				streamed++
				for k, n := range res.Counts() {
					kinds[k] += n
				}
			}
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d of %d shuffled histories streamed alone, with anomalies %v", streamed, total, kinds)
	for _, k := range []checker.Kind{checker.DoubleGrant, checker.StaleWrite, checker.StuckLock, checker.Starvation} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the shuffled histories the stream checked alone: the comparison proves little", k)
		}
	}
	if streamed < total/3 {
		t.Errorf("only %d of %d shuffled histories streamed alone", streamed, total)
	}
}

// TestStream_SameAsCheckOnTestdataShuffled compares the stream with Check
// on every testdata history shuffled within a window as wide as its events
// are apart, so every pair of neighbours may change places.
func TestStream_SameAsCheckOnTestdataShuffled(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	more, _ := filepath.Glob("../cmd/lockpick/testdata/*.jsonl")
	defer checker.SetAdvanceEvery(1)()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range append(files, more...) {
		h, err := checker.ReadFile(f)
		if err != nil || len(h) < 2 {
			continue // malformed on purpose
		}
		gap := int64(1)
		for i := 1; i < len(h); i++ {
			gap = max(gap, h[i].Time-h[i-1].Time)
		}
		for i, opt := range options {
			o := checker.Options{Reorder: time.Duration(gap)}
			if opt != nil {
				o = *opt
				o.Reorder = time.Duration(gap)
			}
			sameAsCheck(t, fmt.Sprintf("%s shuffled, options %d", f, i), shuffle(h, rng, time.Duration(gap)), &o)
		}
	}
}

// TestCheckFile_Late checks the workload (long leases, an unknown
// acquire in a hundred, two events 5ns out of time order): streamed, in
// the default window, with Check's result.
func TestCheckFile_Late(t *testing.T) {
	w := checkertest.Options{Events: 20_000, TTL: time.Minute, UnknownRate: 0.01, CleanUp: true, Late: 2, Seed: 1}
	h := checkertest.Generate(&w)
	path := t.TempDir() + "/h.jsonl"
	if err := checker.WriteFile(path, h); err != nil {
		t.Fatal(err)
	}
	res, sum, err := checker.CheckFile(path, nil, 0)
	if err != nil || sum.Fallback != nil {
		t.Fatalf("CheckFile: %v, %s", err, sum.Path())
	}
	if got, want := sum.Lateness, 5*time.Nanosecond; got != want {
		t.Errorf("lateness = %s, want %s (%s)", got, want, sum.Path())
	}
	want := checker.Check(h, nil)
	if res.Verdict != checker.Ok {
		t.Errorf("verdict %s, want ok: %v", res.Verdict, res.Counts())
	}
	diff(t, "CheckFile", res, want)
}

// TestStream_CompletedBeforeInvoked checks that a stream leaves an
// operation whose completion is earlier than its invoke (by less than the
// window) to the whole history: porcupine finds no place for it.
func TestStream_CompletedBeforeInvoked(t *testing.T) {
	ev := func(p int, typ checker.Type, f string, v, tm int64) checker.Event {
		e := checker.Event{Process: p, Type: typ, F: f, Key: "counter", Time: tm}
		if v >= 0 {
			e.Value = checker.IntValue(v)
		}
		return e
	}
	h := checker.History{
		ev(1, checker.Invoke, checker.FWrite, 15, 1000),
		ev(1, checker.OK, checker.FWrite, 15, 2000),
		ev(2, checker.Invoke, checker.FRead, -1, 9000),
		ev(2, checker.OK, checker.FRead, 16, 8500),
	}
	for i := range h {
		h[i].Index = i
	}
	opt := &checker.Options{Reorder: time.Millisecond}
	if _, err := stream(h, opt); !errors.Is(err, checker.ErrNeedHistory) {
		t.Errorf("Close = %v, want ErrNeedHistory", err)
	}
	if ok, want := sameAsCheck(t, "completed before invoked", h, opt); ok || want.Verdict != checker.Illegal {
		t.Errorf("streamed alone %v, Check's verdict %s; want a fallback, illegal", ok, want.Verdict)
	}
}

// TestStream_RenewedAfterDeadline checks a lease that was never released
// and renewed long after its deadline: the stuck-lock rule had taken its
// hold as ending at the deadline, so the stream must leave it to the whole
// history or give Check's result.
func TestStream_RenewedAfterDeadline(t *testing.T) {
	ev := func(p int, typ checker.Type, f string, ms int64) checker.Event {
		return checker.Event{Process: p, Type: typ, F: f, Key: "lock", Token: fmt.Sprint("t", p), Time: ms * 1e6}
	}
	h := checker.History{ev(1, checker.Invoke, checker.FAcquire, 0), ev(1, checker.OK, checker.FAcquire, 1)}
	h[1].ValidUntil = 100e6
	for ms := int64(200); ms < 3000; ms += 100 { // process 2 fails, and fails
		h = append(h, ev(2, checker.Invoke, checker.FAcquire, ms), ev(2, checker.Fail, checker.FAcquire, ms+1))
	}
	renew := ev(1, checker.OK, checker.FExtend, 3100)
	renew.ValidUntil = 9000e6
	h = append(h, ev(1, checker.Invoke, checker.FExtend, 3100), renew)
	for i := range h {
		h[i].Index = i
	}
	defer checker.SetAdvanceEvery(1)()
	opt := &checker.Options{StuckAfter: time.Second, MaxTTL: time.Second}
	_, err := stream(h, opt)
	if !errors.Is(err, checker.ErrNeedHistory) {
		t.Errorf("Close = %v, want ErrNeedHistory", err)
	}
	sameAsCheck(t, "renewed after its deadline", h, opt)
	h = h[:len(h)-2] // never renewed: streamed alone, a stuck lock
	if ok, res := sameAsCheck(t, "never renewed", h, opt); !ok || res.Counts()[checker.StuckLock] != 1 {
		t.Errorf("streamed alone %v, anomalies %v; want a stuck lock, streamed", ok, res.Counts())
	}
	// A lease valid through the failures, cut short afterwards by a
	// renewal whose deadline is already past: the failures that were busy
	// under it were not.
	h[1].ValidUntil = 60_000e6
	renew.ValidUntil = 150e6
	h = append(h, ev(1, checker.Invoke, checker.FExtend, 3100), renew)
	for i := range h {
		h[i].Index = i
	}
	if _, err := stream(h, opt); !errors.Is(err, checker.ErrNeedHistory) {
		t.Errorf("cut short: Close = %v, want ErrNeedHistory", err)
	}
	if _, res := sameAsCheck(t, "cut short", h, opt); res.Counts()[checker.StuckLock] != 1 {
		t.Errorf("cut short: anomalies %v; want a stuck lock", res.Counts())
	}
}

// TestStream_FlatMemoryCrashed checks that holders that crash, never
// releasing their leases, do not make what a stream holds grow with the
// history: the leases granted after theirs, and the tries of their keys,
// are let go once their deadlines pass.
func TestStream_FlatMemoryCrashed(t *testing.T) {
	w := checkertest.Options{Processes: 16, Keys: 4, Events: 400_000, TTL: 50 * time.Millisecond, UnknownRate: 0.01, Crash: 3, Seed: 5}
	s := checker.NewStream(nil)
	bar, most := 0, 0
	for i, e := range checkertest.Generate(&w) {
		if err := s.Add(e); err != nil {
			t.Fatal(err)
		}
		if i%10_000 == 0 {
			n := checker.Retained(s)
			if i <= 150_000 {
				bar = max(bar, n)
			} else if n > 2*bar+100 {
				t.Fatalf("after %d events the stream holds %d items; at most %d in the first 150k", i, n, bar)
			}
			most = max(most, n)
		}
	}
	if res, err := s.Close(); err != nil || res.Verdict != checker.Ok {
		t.Errorf("verdict %s, %v: %v", res.Verdict, err, res.Counts())
	}
	t.Logf("the stream held at most %d items", most)
}
