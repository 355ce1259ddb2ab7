package trial_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/internal/testetcd"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// buildExtlock builds examples/extlock, a lock in a program of its own, and
// returns the command that runs it.
func buildExtlock(tb testing.TB) []string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "extlock")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/lockpick/lockpick/examples/extlock").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build examples/extlock: %v\n%s", err, out)
	}
	return []string{bin}
}

func TestExternal_SingleBaseline(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	wantSafe(t, runWith(t, "single-baseline", "external", buildExtlock(t), nil), 10)
}

// TestExternal_ConstantToken runs the classic broken lock, SET lock 1 NX PX
// with a bare DEL, through gc-pause-fenced: client 1 wakes from its pause,
// its write is fenced off, and its release frees client 2's lock, so client
// 1 is granted it again while client 2 holds it. Every holder has the token
// "1", and the trial used to come out safe: the checker took the token as
// the holder's name (issue 32).
func TestExternal_ConstantToken(t *testing.T) {
	testredis.Require(t, false)
	t.Parallel()
	tr := runWith(t, "gc-pause-fenced", "external", append(buildExtlock(t), "--constant-token"), nil)
	if got, want := tr.Observed, "unsafe"; got != want {
		t.Fatalf("observed %s, want %s; anomalies: %+v", got, want, tr.Check.Anomalies)
	}
	first(t, tr, checker.DoubleGrant)
	if a := first(t, tr, checker.SharedToken); !strings.Contains(a.Message, `both handed token "1"`) {
		t.Errorf("shared token %q does not name the token", a.Message)
	}
}

// TestExternal_FailoverLockLoss runs a lock program that takes 1 s to
// start, as a JVM does: warmed up before the trial's clock starts, it holds
// the key on n1 when n1 is killed and shows the double grant. Started on
// its first acquire, its start-up ate the schedule and the kill met no lock.
func TestExternal_FailoverLockLoss(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	slow := []string{"sh", "-c", "sleep 1; exec " + buildExtlock(t)[0]}
	wantFailoverDoubleGrant(t, runWith(t, "failover-lock-loss", "external", slow, nil))
}

// TestExternal_PausedBeforeFirstAnswer: a schedule pauses, at once, the
// isolated client of a lock program that takes 2 s to start (what explore
// draws with pause-client). The program is up before the trial's clock
// starts, so the trial is judged; it used to end the run (and the search)
// as an infrastructure error: "answered none of 1 requests".
func TestExternal_PausedBeforeFirstAnswer(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	replier := `while read -r l; do id=${l#*\"id\":}; id=${id%%,*}; printf '{"id":%s,"ok":true,"token":"t%s"}\n' "$id" "$id"; done`
	s, err := scenario.Lookup("single-baseline")
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.WithSubject("external", []string{"sh", "-c", "sleep 2; " + replier}); err != nil {
		t.Fatal(err)
	}
	s.Clients, s.Isolate, s.Duration = 1, []int{1}, scenario.Duration(1500*time.Millisecond)
	s.Faults = []scenario.Step{{Fault: "pause-client", Client: 1, For: scenario.Duration(time.Second)}}
	if _, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil); err != nil {
		t.Fatalf("the pause of a slow-starting lock program ended the run: %v", err)
	}
}

// runProgram puts lock program p through one trial of the catalogue
// scenario name, as `lockpick run NAME --subject-cmd ... --subject-shape
// ... --subject-caps ...` does.
func runProgram(t *testing.T, name string, p scenario.Program) trial.TrialResult {
	t.Helper()
	s, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.WithProgram(p); err != nil {
		t.Fatal(err)
	}
	tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// wantObserved fails t unless the trial was observed one of want (and so
// was conclusive), naming what made it otherwise.
func wantObserved(t *testing.T, tr trial.TrialResult, want ...string) {
	t.Helper()
	if !slices.Contains(want, tr.Observed) {
		t.Fatalf("observed %s (%s), want %s; anomalies %+v; evidence %+v", tr.Observed, tr.Reason, want, tr.Check.Anomalies, tr.Evidence)
	}
}

// heardFirst fails t unless process p's lock told it its lease was lost
// (a lost notification) before p's first write: the race a renewing
// holder, frozen after its read and thawed after its lease ran out, can win
// against its own late write.
func heardFirst(t *testing.T, h checker.History, p int) {
	t.Helper()
	for _, e := range h {
		switch {
		case e.Process != p:
		case e.F == checker.FLost:
			return
		case e.F == checker.FWrite:
			t.Fatalf("safe, but client %d wrote (index %d) before its lock said the lease was lost", p, e.Index)
		}
	}
	t.Fatalf("safe, and client %d's lock never said its lease was lost: the frozen holder's write should be stale", p)
}

// requirePythonEtcd3 skips t (fails it, in CI) without Debian's
// python3-etcd3, which examples/pyetcdlock runs on under /usr/bin/python3.
func requirePythonEtcd3(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import etcd3").Run(); err != nil {
		if os.Getenv(testredis.RequireEnv) == "1" {
			t.Fatalf("/usr/bin/python3 cannot import etcd3 (%v), and %s=1 (make deps installs python3-etcd3)", err, testredis.RequireEnv)
		}
		t.Skipf("/usr/bin/python3 cannot import etcd3 (%v): apt-get install python3-etcd3", err)
	}
}

// TestExternal_EtcdProgram puts examples/pyetcdlock, an etcd lock in
// Python, through etcd's attacks, blocking and renewing its lease
// (--subject-caps block,renew) and trying once without renewing (none):
// a frozen holder (its program frozen with it) loses its lease and writes
// late; a lease survives the raft leader's kill. Clients that try (and
// retry every 20ms) race for the lock when it is released, and the
// releaser, trying again 20ms later, wins about one race in five: in
// etcd-leader-kill, where each client holds the lock once, the other then
// never gets it, a starvation, no less conclusive.
func TestExternal_EtcdProgram(t *testing.T) {
	testetcd.Require(t)
	requirePythonEtcd3(t)
	t.Parallel()
	prog, err := filepath.Abs("../examples/pyetcdlock/pyetcdlock.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		scenario string
		program  scenario.Program
		want     []string
	}{
		// Safe too, when the renewer, thawed with the holder, is told the
		// lease is gone before the holder writes: checked below.
		{"renewing/pause-holder", "etcd-pause-holder", scenario.Program{Command: []string{prog, "--block", "--renew"},
			Caps: []string{scenario.CapBlock, scenario.CapRenew}}, []string{"unsafe", "safe"}},
		{"renewing/leader-kill", "etcd-leader-kill", scenario.Program{Command: []string{prog, "--block", "--renew"},
			Caps: []string{scenario.CapBlock, scenario.CapRenew}}, []string{"safe"}},
		{"try-only/pause-holder", "etcd-pause-holder", scenario.Program{Command: []string{prog}, Caps: []string{}}, []string{"unsafe"}},
		{"try-only/leader-kill", "etcd-leader-kill", scenario.Program{Command: []string{prog}, Caps: []string{}}, []string{"safe", "starves"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.program.Shape = scenario.ShapeEtcd
			tr := runProgram(t, tc.scenario, tc.program)
			t.Logf("observed %s; attempts %v, grants %v, extends %d", tr.Observed, tr.Evidence.Attempts, tr.Evidence.Grants, tr.Evidence.Extends)
			wantObserved(t, tr, tc.want...)
			if tc.scenario == "etcd-pause-holder" && tr.Observed == "safe" {
				heardFirst(t, tr.History, 1)
			}
			renewing := slices.Contains(tc.program.Caps, scenario.CapRenew)
			// Holders keep the lock 3.5s of a 5s lease in etcd-leader-kill,
			// which a renewing program renews every 1.67s; 600ms of 2s in
			// etcd-pause-holder, frozen before the first renewal.
			if want := renewing && tc.scenario == "etcd-leader-kill"; want != (tr.Evidence.Extends > 0) {
				t.Errorf("%d renewals recorded (extends), want some: %v", tr.Evidence.Extends, want)
			}
			if !renewing {
				return
			}
			// One acquire covers each wait: a waiter's acquire is invoked once
			// while the other client holds the lock.
			for p, n := range tr.Evidence.Attempts {
				if n > tr.Evidence.Grants[p]+2 {
					t.Errorf("client %d invoked %d acquires for %d grants: it did not wait for the lock", p, n, tr.Evidence.Grants[p])
				}
			}
		})
	}
}

// TestExternal_RenewingRedisProgram: examples/extlock --block --renew, a
// Redis lock that waits for the lock and renews its lease itself, meets
// the attacks on Redisson's watchdog and waits: in watchdog-long-hold each
// holder keeps the 500ms lease 1.5s, so its writes are judged safe only if
// its renewals are recorded, as extends with the deadlines it reported; in
// reentrant-wait-timeout waiters wait 400ms for the lock, one blocking
// acquire each, and give up in time.
func TestExternal_RenewingRedisProgram(t *testing.T) {
	testredis.Require(t, false)
	t.Parallel()
	extlock := buildExtlock(t)
	for _, name := range []string{"watchdog-long-hold", "reentrant-wait-timeout"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := runProgram(t, name, scenario.Program{Command: append(extlock, "--block", "--renew"),
				Shape: scenario.ShapeSingle, Caps: []string{scenario.CapBlock, scenario.CapRenew}})
			t.Logf("observed %s; attempts %v, grants %v, extends %d", tr.Observed, tr.Evidence.Attempts, tr.Evidence.Grants, tr.Evidence.Extends)
			wantObserved(t, tr, "safe")
			if name == "watchdog-long-hold" && tr.Evidence.Extends == 0 {
				t.Error("no renewal recorded (extends) from a renewing program")
			}
		})
	}
}
