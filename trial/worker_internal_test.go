package trial

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/subject"
)

func TestClientErrors_Judge(t *testing.T) {
	at := 0.2
	pause := evidence.Fault{Fault: "pause-client", Target: "c1", Desc: "pause-client for 1s c1", Fired: &at}
	never := fmt.Errorf("%w: lock program x (client 1) answered none of 1 requests", subject.ErrUnusable)
	silent := fmt.Errorf("%w: lock program x (client 2) answered none of 3 requests after answering its warm-up", subject.ErrSilent)

	// Every client silent, nothing on the trial: the lock never worked.
	var p problemLog
	if err := (clientErrors{{1, never}}).judge(1, nil, nil, []evidence.Fault{{Fault: "pause-client", Desc: "not fired"}}, &p); err == nil {
		t.Error("a lock that answered nothing with no fault fired: no harness failure")
	}
	// The same with a pause on it: the fault explains it, the trial proves nothing.
	p = problemLog{}
	if err := (clientErrors{{1, never}}).judge(1, nil, nil, []evidence.Fault{pause}, &p); err != nil {
		t.Errorf("a lock a pause kept from answering ended the run: %v", err)
	}
	if got := p.all(); len(got) != 1 || !strings.Contains(got[0], "pause-client for 1s c1") || strings.Contains(got[0], "subject:") {
		t.Errorf("problems %q, want one naming the pause", got)
	}
	// Up since its warm-up, silent with no fault: inconclusive, not a harness failure.
	p = problemLog{}
	if err := (clientErrors{{2, silent}}).judge(1, nil, nil, nil, &p); err != nil || len(p.all()) != 1 {
		t.Errorf("silent after its warm-up: %v, problems %q; want no error and one problem", err, p.all())
	}
	// Paused for good: explained, no problem.
	p = problemLog{}
	if err := (clientErrors{{2, silent}}).judge(2, map[int]bool{2: true}, nil, []evidence.Fault{pause}, &p); err != nil || len(p.all()) != 0 {
		t.Errorf("paused for good: %v, problems %q; want neither", err, p.all())
	}
}
