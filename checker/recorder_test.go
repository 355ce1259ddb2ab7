package checker_test

import (
	"sync"
	"testing"

	"github.com/lockpick/lockpick/checker"
)

func TestRecorder_Record(t *testing.T) {
	var now int64
	r := checker.NewRecorder(func() int64 { now += 10; return now })
	e := r.Record(checker.Event{Index: 99, Process: 1, Type: checker.Invoke, F: "acquire", Key: "lock"})
	if got, want := [2]int64{int64(e.Index), e.Time}, [2]int64{0, 10}; got != want {
		t.Errorf("index, time = %v, want %v", got, want)
	}
	e = r.Record(checker.Event{Process: 1, Type: checker.OK, F: "acquire", Time: 5})
	if got, want := [2]int64{int64(e.Index), e.Time}, [2]int64{1, 5}; got != want {
		t.Errorf("index, time = %v, want %v (a set time is kept)", got, want)
	}
	h := r.History()
	h[0].Key = "changed"
	if got, want := r.History()[0].Key, "lock"; got != want {
		t.Errorf("History() is not a copy: key = %q, want %q", got, want)
	}
}

func TestRecorder_Concurrent(t *testing.T) {
	r := checker.NewRecorder(nil)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for p := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r.Record(checker.Event{Process: p, Type: checker.Invoke, F: "read", Key: "counter"})
			}
		}()
	}
	wg.Wait()
	h := r.History()
	if got, want := len(h), workers*each; got != want {
		t.Fatalf("len = %d, want %d", got, want)
	}
	for i, e := range h {
		if e.Index != i {
			t.Fatalf("event %d has index %d", i, e.Index)
		}
		if i > 0 && e.Time < h[i-1].Time {
			t.Fatalf("time went back at %d: %d < %d", i, e.Time, h[i-1].Time)
		}
	}
}

func TestNow(t *testing.T) {
	a, b := checker.Now(), checker.Now()
	if a <= 0 || b < a {
		t.Errorf("Now() = %d then %d, want positive and non-decreasing", a, b)
	}
}
