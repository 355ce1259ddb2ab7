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
// doing one cycle only: its second acquire, whose reply the attack drops,
// never comes, so no reply is lost. The trial must be inconclusive, never
// safe: the attack did not land.
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
	if tr.Observed != evidence.Inconclusive || !strings.Contains(tr.Reason, "the moment never came: client 1 acquires") {
		t.Fatalf("observed %s (%s); want inconclusive: the moment never came", tr.Observed, tr.Reason)
	}
}
