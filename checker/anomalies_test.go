package checker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
)

func TestCheck_StaleWrite(t *testing.T) {
	res := checkFile(t, "stale-write.jsonl", map[checker.Kind]int{checker.StaleWrite: 1})
	if len(res.Anomalies) != 1 {
		return
	}
	a := res.Anomalies[0]
	if got, want := a.Message, `process 1 wrote 7 to "counter" at +2.300s, 1.19s after its lease on lock "lock" expired (granted on n1 at +0.110s, valid until +1.110s), after process 2 was granted the lock on n2 at +1.210s`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	if got, want := a.Processes, []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("processes = %v, want %v", got, want)
	}
	if a.Prevented {
		t.Errorf("prevented = true, want false")
	}
}

func TestCheck_StaleWriteFenced(t *testing.T) {
	res := checkFile(t, "stale-write-fenced.jsonl", nil)
	if got, want := res.PreventedCounts()[checker.StaleWrite], 1; got != want {
		t.Fatalf("prevented stale writes = %d, want %d", got, want)
	}
	a := res.Prevented[0]
	if !a.Prevented {
		t.Errorf("prevented = false, want true")
	}
	if got, want := a.Message, `process 1 wrote 7 to "counter" at +2.300s, 1.19s after its lease on lock "lock" expired (granted on n1 at +0.110s, valid until +1.110s), after process 2 was granted the lock on n2 at +1.210s; the resource rejected it by its fencing token 1 (process 2 holds 2)`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
}

func TestCheck_LostUpdate(t *testing.T) {
	res := checkFile(t, "lost-update.jsonl", map[checker.Kind]int{checker.LostUpdate: 1})
	if len(res.Anomalies) != 1 {
		return
	}
	if got, want := res.Anomalies[0].Message, `2 writes of 6 to "counter" succeeded (process 1 at +0.900s and process 2 at +1.300s); the counter only increments, so an increment was lost`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
}

func TestCheck_LostUpdateStaleRead(t *testing.T) {
	res := checkFile(t, "stale-read.jsonl", map[checker.Kind]int{checker.LostUpdate: 1})
	if len(res.Anomalies) != 1 {
		return
	}
	a := res.Anomalies[0]
	if got, want := a.Processes, []int{2}; !slices.Equal(got, want) {
		t.Errorf("processes = %v, want %v (the read that saw an old value)", got, want)
	}
	if got, want := a.Message, `no order of the reads and writes of "counter" explains process 2 reading 5 at +0.120s: the longest consistent order has 2 operations and leaves the counter at 6`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
}

func TestCheck_StuckLock(t *testing.T) {
	res := checkFile(t, "stuck-lock.jsonl", map[checker.Kind]int{checker.StuckLock: 1})
	if len(res.Anomalies) != 1 {
		return
	}
	a := res.Anomalies[0]
	if got, want := a.Message, `lock "lock" stayed unavailable with no live holder for 3.808s: 8 acquires by processes 2 and 3 failed from +2.002s to +5.008s, although the last possible holder could keep it only until +1.200s (process 1's acquire with an unknown outcome at +0.200s, for at most 1s); the last failed with "not acquired"; it never became available again`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	if got, want := a.Processes, []int{2, 3}; !slices.Equal(got, want) {
		t.Errorf("processes = %v, want %v", got, want)
	}
}

func TestCheck_StuckLockOptions(t *testing.T) {
	h := readHistory(t, "stuck-lock.jsonl")
	tests := []struct {
		name string
		opt  checker.Options
		want int
	}{
		{"disabled", checker.Options{StuckAfter: -1}, 0},
		{"patient", checker.Options{StuckAfter: 5 * time.Second}, 0},
		{"long ttl", checker.Options{MaxTTL: 3 * time.Second}, 0},
		{"short ttl", checker.Options{MaxTTL: time.Millisecond}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := checker.Check(h, &tt.opt)
			if got := res.Counts()[checker.StuckLock]; got != tt.want {
				t.Errorf("stuck locks = %d, want %d\n%s", got, tt.want, messages(res))
			}
		})
	}
}

func TestCheck_SlowExpiry(t *testing.T) {
	checkFile(t, "slow-expiry.jsonl", nil)
}

func TestCheck_Starvation(t *testing.T) {
	res := checkFile(t, "starvation.jsonl", map[checker.Kind]int{checker.Starvation: 1})
	if len(res.Anomalies) != 1 {
		return
	}
	if got, want := res.Anomalies[0].Message, `process 3 never acquired lock "lock": all its 8 attempts from +0.100s to +2.910s failed, while processes 1 and 2 were granted it 7 times; the last failed with "not acquired"`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	if got := checker.Check(readHistory(t, "starvation.jsonl"), &checker.Options{StarveAfter: 3 * time.Second}).Counts(); len(got) != 0 {
		t.Errorf("with StarveAfter 3s: counts = %v, want none", got)
	}
}

// Process 3 fails once, its acquire at +0.5s has an unknown outcome (it
// may have been granted), then it fails from +0.9s to +2.91s while others
// are granted the lock: the run after the unknown acquire starved on its
// own (2.01s), and the runs on either side of it never join.
func TestCheck_StarvationUnknownAcquire(t *testing.T) {
	res := checkFile(t, "starvation-unknown.jsonl", map[checker.Kind]int{checker.Starvation: 1})
	if len(res.Anomalies) != 1 {
		return
	}
	if got, want := res.Anomalies[0].Message, `process 3 was not granted lock "lock" after its acquire at +0.500s whose outcome is unknown: all its 6 attempts from +0.900s to +2.910s failed, while processes 1 and 2 were granted it 5 times; the last failed with "not acquired"`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	// 2.81s from its first failure to its last, but neither run is 2.1s.
	if got := checker.Check(readHistory(t, "starvation-unknown.jsonl"), &checker.Options{StarveAfter: 2100 * time.Millisecond}).Counts(); len(got) != 0 {
		t.Errorf("with StarveAfter 2.1s: counts = %v, want none", got)
	}
}

func TestCheck_LostUpdateCounterJump(t *testing.T) {
	res := checkFile(t, "counter-jump.jsonl", map[checker.Kind]int{checker.LostUpdate: 1})
	if len(res.Anomalies) != 1 {
		return
	}
	if got, want := res.Anomalies[0].Message, `no order of the reads and writes of "counter" explains process 2 writing 8 at +0.140s: the longest consistent order has 3 operations and leaves the counter at 6`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	if got, want := res.Anomalies[0].Ops, []int{12, 13}; !slices.Equal(got, want) {
		t.Errorf("ops = %v, want %v", got, want)
	}
}

func TestCheck_Ignored(t *testing.T) {
	h := checker.History{
		{Index: 0, Process: 1, Type: checker.Invoke, F: "acquire", Key: "lock", Time: 10},
		{Index: 1, Process: 1, Type: checker.OK, F: "release", Key: "lock", Time: 20},
		{Index: 2, Process: 2, Type: checker.OK, F: "acquire", Key: "lock", ValidUntil: 100, Time: 30},
		{Index: 3, Process: -1, Type: checker.Info, F: "nemesis", Value: checker.TextValue("kill n1"), Time: 40},
	}
	res := checker.Check(h, nil)
	if got, want := res.Ignored, 2; got != want {
		t.Errorf("ignored = %d, want %d", got, want)
	}
	if got, want := res.Verdict, checker.Ok; got != want {
		t.Errorf("verdict = %s, want %s", got, want)
	}
}

// A late write presenting a fence before any newer fence reached the
// resource is ordered ahead of the next holder's work: not a stale write.
func TestCheck_LateWriteInFenceOrder(t *testing.T) {
	checkFile(t, "stale-write-in-fence-order.jsonl", nil)
}

// The same late write after the next holder's fenced read was accepted is
// out of token order: a stale write the resource should have refused.
func TestCheck_LateWriteOutOfFenceOrder(t *testing.T) {
	checkFile(t, "stale-write-out-of-fence-order.jsonl", map[checker.Kind]int{checker.StaleWrite: 1})
}

// The same late write when the next holder's fence is no higher (a fence
// counter that went back) is not ordered by anything: a stale write.
func TestCheck_LateWriteFenceNotNewer(t *testing.T) {
	checkFile(t, "stale-write-fence-not-newer.jsonl", map[checker.Kind]int{checker.StaleWrite: 1})
}

// TestCheck_Livelock: three processes fail for 2.8s and nobody is ever
// granted the lock: they kept each other out, a starvation, not a stuck
// lock (which needs a key left by someone).
func TestCheck_Livelock(t *testing.T) {
	res := checkFile(t, "livelock.jsonl", map[checker.Kind]int{checker.Starvation: 1})
	if len(res.Anomalies) != 1 {
		return
	}
	a := res.Anomalies[0]
	if got, want := a.Message, `livelock: no process had been granted lock "lock" yet: 30 acquires by processes 1, 2 and 3 failed from +0.000s to +2.762s (2.762s) while no lease was held, each kept out by the others' attempts (or the lock did not work); the last failed with "lockcore: lock not acquired: 1 of 3 nodes granted"`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	if got, want := a.Processes, []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("processes = %v, want %v", got, want)
	}
}

// TestCheck_LivelockThenGrant: the same failures followed by a grant are
// still a livelock, not a stuck lock: nobody had held the key while they
// failed (Redlock's split vote that load breaks once, after 2.3s).
func TestCheck_LivelockThenGrant(t *testing.T) {
	h := readHistory(t, "livelock.jsonl")
	last := h[len(h)-1].Time
	h = append(h,
		checker.Event{Index: len(h), Process: 1, Type: checker.Invoke, F: checker.FAcquire, Key: "lock", Time: last + 1e6},
		checker.Event{Index: len(h) + 1, Process: 1, Type: checker.OK, F: checker.FAcquire, Key: "lock", Token: "t", ValidUntil: last + 1e9, Time: last + 2e6})
	c := checker.Check(h, nil).Counts()
	if c[checker.StuckLock] != 0 || c[checker.Starvation] != 1 {
		t.Errorf("counts = %v, want 1 starvation and no stuck-lock", c)
	}
	res, err := stream(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Counts(); c[checker.StuckLock] != 0 || c[checker.Starvation] != 1 {
		t.Errorf("stream: counts = %v, want 1 starvation and no stuck-lock", c)
	}
}

// TestCheck_Lost: a lost notification ends the holder's certain ownership,
// so a grant after it is no double grant (without it, it is one), and a
// write the holder makes under that lease afterwards is stale.
func TestCheck_Lost(t *testing.T) {
	checkFile(t, "lost-then-granted.jsonl", nil)
	h := readHistory(t, "lost-then-granted.jsonl")
	without := append(checker.History{}, h[:2]...)
	for _, e := range h[3:] {
		e.Index = len(without)
		without = append(without, e)
	}
	if got := checker.Check(without, nil).Counts()[checker.DoubleGrant]; got != 1 {
		t.Fatalf("without the lost notification: %d double grants, want 1", got)
	}
	res := checkFile(t, "write-after-lost.jsonl", map[checker.Kind]int{checker.StaleWrite: 1})
	if len(res.Anomalies) == 1 && !slices.Equal(res.Anomalies[0].Processes, []int{1, 2}) {
		t.Errorf("processes = %v, want [1 2]", res.Anomalies[0].Processes)
	}
}
