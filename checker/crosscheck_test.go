package checker_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/checker/checkertest"
)

// agree checks that the interval check and the porcupine lease model find a
// double grant on exactly the same lock keys of h.
func agree(t *testing.T, name string, h checker.History) (illegal int) {
	t.Helper()
	direct := make(map[string]bool)
	for _, a := range checker.Check(h, &checker.Options{StuckAfter: -1, StarveAfter: -1}).Anomalies {
		if a.Kind == checker.DoubleGrant {
			direct[a.Key] = true
		}
	}
	for key, v := range checker.LeaseModelVerdicts(h, 20*time.Second) {
		if v == checker.Unknown {
			t.Errorf("%s: lease model timed out on %q", name, key)
			continue
		}
		if got, want := v == checker.Illegal, direct[key]; got != want {
			t.Errorf("%s: key %q: lease model illegal = %v, interval check found a double grant = %v", name, key, got, want)
		}
		if v == checker.Illegal {
			illegal++
		}
	}
	return illegal
}

func TestLeaseModel_AgreesOnTestdata(t *testing.T) {
	ents, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	illegal := 0
	for _, e := range ents {
		illegal += agree(t, e.Name(), readHistory(t, e.Name()))
	}
	if illegal < 3 {
		t.Errorf("only %d testdata histories have a double grant; the cross-check proves little", illegal)
	}
}

func TestLeaseModel_AgreesOnGenerated(t *testing.T) {
	illegal, total := 0, 0
	for seed := range uint64(60) {
		w := checkertest.Options{Processes: 4, Keys: 2, Events: 300, TTL: 5 * time.Millisecond, Seed: seed,
			BrokenRate: 0.02 * float64(seed%4), PauseRate: 0.1 * float64(seed%3), UnknownRate: 0.05 * float64(seed%2),
			Grants: seed%2 == 0}
		if seed%5 == 0 { // every holder has one token: it proves nothing about who holds the lock
			w.Token = "1"
		}
		illegal += agree(t, fmt.Sprintf("seed %d", seed), checkertest.Generate(&w))
		total += 2
	}
	if illegal == 0 || illegal == total {
		t.Errorf("%d of %d keys illegal; want a mix", illegal, total)
	}
}

func TestCheck_Generated(t *testing.T) {
	tests := []struct {
		name string
		w    checkertest.Options
		want []checker.Kind // kinds that must be found
		not  []checker.Kind // kinds that must not be found
	}{
		{"correct", checkertest.Options{Processes: 8, Keys: 2, Events: 5000, TTL: time.Second},
			nil, []checker.Kind{checker.DoubleGrant, checker.StaleWrite, checker.LostUpdate, checker.StuckLock, checker.Starvation}},
		{"broken lock", checkertest.Options{Processes: 8, Keys: 2, Events: 5000, TTL: time.Second, BrokenRate: 0.2},
			[]checker.Kind{checker.DoubleGrant, checker.LostUpdate}, []checker.Kind{checker.StuckLock}},
		{"pauses", checkertest.Options{Processes: 8, Keys: 2, Events: 5000, TTL: 10 * time.Millisecond, PauseRate: 0.2},
			[]checker.Kind{checker.StaleWrite}, []checker.Kind{checker.DoubleGrant, checker.StuckLock}},
		// Fencing stops the stale writes that come after the next holder's
		// first write, not those that come before it.
		{"pauses fenced", checkertest.Options{Processes: 8, Keys: 2, Events: 5000, TTL: 10 * time.Millisecond, PauseRate: 0.2, Fenced: true},
			nil, []checker.Kind{checker.DoubleGrant, checker.StuckLock}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.w.Seed = 7
			res := checker.CheckTimeout(checkertest.Generate(&tt.w), nil, 10*time.Second)
			counts := res.Counts()
			for _, k := range tt.want {
				if counts[k] == 0 {
					t.Errorf("no %s found; counts = %v", k, counts)
				}
			}
			for _, k := range tt.not {
				if counts[k] != 0 {
					t.Errorf("%d %s found, want none:\n%s", counts[k], k, messages(res))
				}
			}
			if len(res.TimedOut) > 0 {
				t.Errorf("timed out: %v", res.TimedOut)
			}
			if tt.w.Fenced && res.PreventedCounts()[checker.StaleWrite] == 0 {
				t.Errorf("fenced: no prevented stale write")
			}
		})
	}
}

func TestCheckTimeout_Unknown(t *testing.T) {
	// Forty concurrent writes with unknown outcomes and a read no order can
	// explain: proving that takes an exponential search.
	h := checker.History{
		{Process: 0, Type: checker.Invoke, F: "write", Key: "counter", Value: checker.IntValue(0), Time: 1},
		{Process: 0, Type: checker.OK, F: "write", Key: "counter", Value: checker.IntValue(0), Time: 2},
	}
	for p := 1; p <= 40; p++ {
		h = append(h, checker.Event{Process: p, Type: checker.Invoke, F: "write", Key: "counter",
			Value: checker.IntValue(int64(p % 20)), Time: int64(10 + p)})
	}
	h = append(h,
		checker.Event{Process: 99, Type: checker.Invoke, F: "read", Key: "counter", Time: 100},
		checker.Event{Process: 99, Type: checker.OK, F: "read", Key: "counter", Value: checker.IntValue(-5), Time: 101})
	for i := range h {
		h[i].Index = i
	}
	start := time.Now()
	res := checker.CheckTimeout(h, nil, 200*time.Millisecond)
	if got, want := res.Verdict, checker.Unknown; got != want {
		t.Errorf("verdict = %s, want %s\n%s", got, want, messages(res))
	}
	if got, want := len(res.TimedOut), 1; got != want {
		t.Errorf("timed out = %v, want %d search", res.TimedOut, want)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %s with a 200ms timeout", elapsed)
	}
}
