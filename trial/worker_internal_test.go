package trial

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/faults"
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

// TestWorkerProc_FreezesItsProgram: a lock program runs in a process group
// of its own, which a pause-client step's SIGSTOP of the worker does not
// reach: the runner stops the program's group when the worker stops, and
// continues it when the worker continues, so a renewing program freezes
// with its client. It stops following when the worker exits.
func TestWorkerProc_FreezesItsProgram(t *testing.T) {
	start := func(pgid bool) *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: pgid}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	worker, program := start(false), start(true)
	p := &workerProc{cmd: worker}
	followed := make(chan struct{})
	go func() { defer close(followed); p.freezeProgram(program.Process.Pid) }()
	waitState := func(pid int, want string) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); procState(t, pid) != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is in state %q, want %q", pid, procState(t, pid), want)
			}
		}
	}
	for range 2 {
		if err := faults.PausePID(worker.Process.Pid); err != nil {
			t.Fatal(err)
		}
		waitState(program.Process.Pid, "T")
		if err := faults.ResumePID(worker.Process.Pid); err != nil {
			t.Fatal(err)
		}
		waitState(program.Process.Pid, "S")
	}
	_ = worker.Process.Kill()
	_ = worker.Wait()
	select {
	case <-followed:
	case <-time.After(2 * time.Second):
		t.Fatal("still following a worker that exited")
	}
}

// TestWorkerReady: the ready line carries a lock program's process group,
// and is the bare "ready" without one.
func TestWorkerReady(t *testing.T) {
	for _, r := range []workerReady{{}, {ProgramGroup: 4242}} {
		var b strings.Builder
		if err := writeReady(&b, r); err != nil {
			t.Fatal(err)
		}
		got, ok := parseReady(strings.TrimSuffix(b.String(), "\n"))
		if !ok || got != r {
			t.Errorf("%q read back as %+v, %v; want %+v", b.String(), got, ok, r)
		}
	}
	for _, line := range []string{"readyX", "ready {", "not ready: x"} {
		if _, ok := parseReady(line); ok {
			t.Errorf("%q read as a ready line", line)
		}
	}
}
