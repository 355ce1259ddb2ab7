package faults_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
)

func TestProcessKillFault_KillsAndVerifies(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("skipping: cannot start sleep: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // reap it, as the runner reaps its workers
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	f := &faults.ProcessKillFault{PID: cmd.Process.Pid}
	ctx := context.Background()

	if _, err := f.Verify(ctx, nil); !errors.Is(err, faults.ErrNoEffect) {
		t.Fatalf("Verify on a live process: err = %v, want ErrNoEffect", err)
	}
	if err := f.Inject(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got, err := f.Verify(ctx, nil)
	if err != nil || got != "killed (SIGKILL)" {
		t.Fatalf("Verify after the kill = %q, %v", got, err)
	}
	<-done
	if err := f.Heal(ctx, nil); err != nil {
		t.Errorf("Heal = %v, want nil (a kill is not undone)", err)
	}
	if err := (&faults.ProcessKillFault{}).Inject(ctx, nil); !errors.Is(err, cluster.ErrBadFault) {
		t.Errorf("Inject with pid 0: err = %v, want ErrBadFault", err)
	}
}
