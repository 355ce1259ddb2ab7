package faults

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A ProcessKillFault kills a process that is not a Redis node, such as a
// lock client running as its own process, with SIGKILL: the client crashes
// mid-work, its in-flight requests and its watchdog with it. A kill is not
// undone: Heal does nothing.
type ProcessKillFault struct {
	// PID is the process to kill.
	PID int `json:"pid"`
}

var (
	_ Fault    = (*ProcessKillFault)(nil)
	_ Verifier = (*ProcessKillFault)(nil)
)

// Inject sends SIGKILL to the process. It returns [cluster.ErrBadFault] for a pid
// that is not positive, and the kill(2) error, such as ESRCH for a process
// that does not exist.
func (f *ProcessKillFault) Inject(ctx context.Context, _ *cluster.Node) error {
	if f.PID <= 0 {
		return fmt.Errorf("%w: pid %d", cluster.ErrBadFault, f.PID)
	}
	if err := syscall.Kill(f.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("cluster: kill pid %d: %w", f.PID, err)
	}
	return nil
}

// Heal does nothing: the process stays dead.
func (f *ProcessKillFault) Heal(context.Context, *cluster.Node) error { return nil }

// Verify returns "killed (SIGKILL)" once the process is gone or a zombie
// waiting for its parent, and an error wrapping [ErrNoEffect] if it still
// runs 200ms later.
func (f *ProcessKillFault) Verify(ctx context.Context, _ *cluster.Node) (string, error) {
	if f.PID <= 0 {
		return "", fmt.Errorf("%w: pid %d", cluster.ErrBadFault, f.PID)
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		st, err := procState(f.PID)
		if os.IsNotExist(err) || st == 'Z' || st == 'X' {
			return "killed (SIGKILL)", nil
		}
		if err != nil {
			return "", noEffect("process (pid %d): %v", f.PID, err)
		}
		if time.Now().After(deadline) {
			return "", noEffect("process (pid %d) is in state %c, still alive", f.PID, st)
		}
		if err := cluster.SleepCtx(ctx, 5*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// Describe returns e.g. "kill pid 4242".
func (f *ProcessKillFault) Describe() string { return fmt.Sprintf("kill pid %d", f.PID) }
