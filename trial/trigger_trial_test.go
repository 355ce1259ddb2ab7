package trial_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// TestReplyLoss_MissedDropIsInconclusive plays reply-loss with client 1
// doing one cycle only: the drop, from its first release, meets no second
// acquire, so no reply is lost (n1's key absent), and its second release,
// the moment of the kills, never comes. The trial must be inconclusive,
// never safe: the attack did not land.
func TestReplyLoss_MissedDropIsInconclusive(t *testing.T) {
	testredis.Require(t, false)
	s, err := scenario.Lookup("reply-loss")
	if err != nil {
		t.Fatal(err)
	}
	s.Clients, s.Cycles, s.Duration = 1, []int{1}, scenario.Duration(1500*time.Millisecond)
	tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the moment never came: client 1 releases (its 2nd release)", "required drop-replies n1: key held after it; found key absent"} {
		if tr.Observed != evidence.Inconclusive || !strings.Contains(tr.Reason, want) {
			t.Fatalf("observed %s (%s); want inconclusive: %s", tr.Observed, tr.Reason, want)
		}
	}
}
