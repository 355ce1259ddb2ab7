package trial_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
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
