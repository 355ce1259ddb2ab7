package cluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// A PauseFault freezes a node's process with SIGSTOP until healed with
// SIGCONT: it keeps its connections open but answers nothing, as in a long
// stop-the-world pause or a VM migration.
type PauseFault struct{}

var _ Fault = (*PauseFault)(nil)

// Inject sends SIGSTOP. It returns [ErrNotRunning] for a node that is down.
func (f *PauseFault) Inject(ctx context.Context, n *Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	return p.Pause()
}

// Heal sends SIGCONT; a node that is down is left alone.
func (f *PauseFault) Heal(ctx context.Context, n *Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	if err := p.Resume(); err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	return nil
}

// Describe returns "pause".
func (f *PauseFault) Describe() string { return "pause" }

// A ProcessPauseFault freezes any process of this host by pid, typically a
// lockpick worker: SIGSTOP stops every thread, so a Go worker's lease
// watchdog freezes with it, exactly like a stop-the-world GC pause. The
// Node argument of Inject and Heal is ignored and may be nil.
type ProcessPauseFault struct {
	// PID is the process to freeze.
	PID int `json:"pid"`
}

var _ Fault = (*ProcessPauseFault)(nil)

// Inject freezes the process; see [PausePID].
func (f *ProcessPauseFault) Inject(ctx context.Context, _ *Node) error { return PausePID(f.PID) }

// Heal thaws the process; see [ResumePID].
func (f *ProcessPauseFault) Heal(ctx context.Context, _ *Node) error { return ResumePID(f.PID) }

// Describe returns e.g. "pause pid 4242".
func (f *ProcessPauseFault) Describe() string { return fmt.Sprintf("pause pid %d", f.PID) }

// PausePID freezes the process pid (every thread of it) with SIGSTOP. It
// returns [ErrBadFault] for a pid that is not positive, and the kill(2)
// error, such as ESRCH for a process that does not exist.
func PausePID(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("%w: pid %d", ErrBadFault, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("cluster: pause pid %d: %w", pid, err)
	}
	return nil
}

// ResumePID thaws the process pid with SIGCONT. A process that no longer
// exists is not an error, so resuming is idempotent.
func ResumePID(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("%w: pid %d", ErrBadFault, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cluster: resume pid %d: %w", pid, err)
	}
	return nil
}

func init() {
	RegisterFault("pause", func() Fault { return new(PauseFault) })
	RegisterFault("pause-process", func() Fault { return new(ProcessPauseFault) })
}
