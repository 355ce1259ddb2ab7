package trial

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// constantLock grants every acquire with the token "1", as SET lock 1 NX
// does when the key is free.
type constantLock struct{}

func (constantLock) Acquire(context.Context) (subject.Grant, error) {
	return subject.Grant{Token: "1", ValidUntil: time.Now().Add(time.Second), Node: "n1"}, nil
}

func (constantLock) Release(context.Context) (string, error) { return "n1", nil }

// TestWorker_NumbersGrants: the worker numbers its process's grants, from
// 1, whatever token the lock hands out, and every event under a lease
// carries its number: a re-entry, the reads and writes, the renewals, the
// release.
func TestWorker_NumbersGrants(t *testing.T) {
	res, err := startResource(false)
	if err != nil {
		t.Fatal(err)
	}
	defer res.close()
	var h checker.History
	rec := checker.NewRecorder(nil)
	s := scenario.Scenario{Hold: scenario.Duration(time.Millisecond), Cycles: []int{2}}
	s.Lock.Key, s.Lock.Reenter = "lock", 1
	w := &worker{process: 1, s: s, subj: constantLock{}, mono: newMonoClock(0), problems: &problemLog{},
		res: &resourceClient{addr: res.addr()}}
	renewed := false
	w.emit = func(e checker.Event) { // all on the worker's goroutine
		h = append(h, rec.Record(e))
		if e.F == checker.FAcquire && e.Type == checker.OK && e.Grant == 2 && !renewed {
			renewed = true
			w.renewed(lockcore.Renewal{Token: "1"}) // the watchdog of lease 2
			w.renewed(lockcore.Renewal{Done: true, Token: "1", ValidUntil: time.Now().Add(time.Second)})
		}
	}
	w.run(context.Background())

	want := map[string][]int{
		checker.FAcquire: {1, 1, 2, 2}, // ok acquires: a lease, its re-entry, the next lease and its re-entry
		checker.FExtend:  {2, 2},
		checker.FRead:    {1, 1, 2, 2},
		checker.FWrite:   {1, 1, 2, 2},
		checker.FRelease: {1, 1, 2, 2},
	}
	got := map[string][]int{}
	for _, e := range h {
		if e.F != checker.FAcquire || e.Type == checker.OK {
			got[e.F] = append(got[e.F], e.Grant)
		} else if e.Grant != 0 {
			t.Errorf("acquire invoke %+v has a grant number", e)
		}
	}
	for f, ns := range want {
		if !slices.Equal(got[f], ns) {
			t.Errorf("%s grant numbers = %v, want %v", f, got[f], ns)
		}
	}
	if res := checker.Check(h, nil); len(res.Anomalies) > 0 {
		t.Errorf("one worker's leases, re-entered: %+v", res.Anomalies)
	}
}
