package checker_test

import (
	"slices"
	"testing"

	"github.com/lockpick/lockpick/checker"
)

func TestCheck_DoubleGrant(t *testing.T) {
	res := checkFile(t, "double-grant.jsonl", map[checker.Kind]int{checker.DoubleGrant: 1})
	if len(res.Anomalies) != 1 {
		t.FailNow()
	}
	a := res.Anomalies[0]
	if got, want := a.Message, `process 2 was granted lock "lock" on n2 at +1.204s while process 1 held it (granted on n1 at +0.950s, valid until +1.950s); leases overlapped for 746ms`; got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	if got, want := a.Processes, []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("processes = %v, want %v", got, want)
	}
	if got, want := a.Nodes, []string{"n1", "n2"}; !slices.Equal(got, want) {
		t.Errorf("nodes = %v, want %v", got, want)
	}
	if got, want := a.Ops, []int{1, 2, 6, 4, 5, 8}; !slices.Equal(got, want) {
		t.Errorf("ops = %v, want %v", got, want)
	}
	if got, want := len(a.Windows), 2; got != want {
		t.Fatalf("windows = %v, want %d", a.Windows, want)
	}
	w := a.Windows[0]
	if got, want := [4]int64{int64(w.Process), w.Start, w.End, w.Fence}, [4]int64{1, 10950000000, 11950000000, 1}; got != want {
		t.Errorf("window 0 = %v, want %v", got, want)
	}
	if got, want := a.Windows[1].Token, "b1"; got != want {
		t.Errorf("window 1 token = %q, want %q", got, want)
	}
	if got, want := a.Key, "lock"; got != want {
		t.Errorf("key = %q, want %q", got, want)
	}
}

func TestCheck_DoubleGrantConcurrentAcquires(t *testing.T) {
	res := checkFile(t, "concurrent-grants.jsonl", map[checker.Kind]int{checker.DoubleGrant: 1})
	if len(res.Anomalies) == 1 {
		if got, want := res.Anomalies[0].Message, `processes 1 and 2 held lock "lock" at once: process 1 was granted it on n1 by +0.100s (until its release at +0.700s) and process 2 on n2 by +0.200s (until its release at +0.800s); leases overlapped for 500ms`; got != want {
			t.Errorf("message = %q\nwant      %q", got, want)
		}
	}
}

func TestCheck_DoubleGrantExtendAfterExpiry(t *testing.T) {
	res := checkFile(t, "extend-after-expiry.jsonl", map[checker.Kind]int{checker.DoubleGrant: 1})
	if len(res.Anomalies) == 1 {
		if got, want := res.Anomalies[0].Message, `process 1 extended its lease on lock "lock" at +0.710s while process 2 held it (granted on n1 at +0.600s, until its release at +0.900s); leases overlapped for 90ms`; got != want {
			t.Errorf("message = %q\nwant      %q", got, want)
		}
	}
}

func TestCheck_GrantAfterDeadline(t *testing.T) {
	checkFile(t, "grant-after-deadline.jsonl", nil)
}

func TestCheck_InfoAcquire(t *testing.T) {
	checkFile(t, "info-acquire.jsonl", nil)
}

func TestCheck_ReleaseInfo(t *testing.T) {
	checkFile(t, "release-info.jsonl", nil)
}

func TestCheck_Reentrant(t *testing.T) {
	checkFile(t, "reentrant.jsonl", nil)
}

func TestCheck_Empty(t *testing.T) {
	res := checker.Check(nil, nil)
	if got, want := res.Verdict, checker.Ok; got != want {
		t.Errorf("verdict = %s, want %s", got, want)
	}
}

// A watchdog renews the lease while its holder writes: the write invoked
// after the first deadline is covered by the renewal, and the renewal does
// not turn the open write into an unknown one.
func TestCheck_WatchdogRenewalBesideWrite(t *testing.T) {
	res := checkFile(t, "watchdog-renewal.jsonl", map[checker.Kind]int{})
	if res.Ignored != 0 {
		t.Errorf("ignored %d completions; the extend and the write pair on their own", res.Ignored)
	}
}
