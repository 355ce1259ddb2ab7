package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A PauseFault freezes a node's process with SIGSTOP until healed with
// SIGCONT: it keeps its connections open but answers nothing, as in a long
// stop-the-world pause or a VM migration.
type PauseFault struct{}

var (
	_ Fault    = (*PauseFault)(nil)
	_ Verifier = (*PauseFault)(nil)
)

// Inject sends SIGSTOP. It returns [cluster.ErrNotRunning] for a node that is down.
func (f *PauseFault) Inject(ctx context.Context, n *cluster.Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	return p.Pause()
}

// Heal sends SIGCONT; a node that is down is left alone.
func (f *PauseFault) Heal(ctx context.Context, n *cluster.Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	if err := p.Resume(); err != nil && !errors.Is(err, cluster.ErrNotRunning) {
		return err
	}
	return nil
}

// Verify returns "frozen (SIGSTOP)" if the process is stopped, as its
// /proc stat says; for a process of another host (a container) it returns
// "frozen (no reply to PING in 150ms)" if PING times out. Otherwise it
// returns an error wrapping [ErrNoEffect].
func (f *PauseFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	p, err := procOf(n)
	if err != nil {
		return "", err
	}
	if pp, ok := p.(cluster.PIDProc); ok {
		pid := pp.PID()
		if pid == 0 {
			return "", noEffect("%s is not running", n.Name)
		}
		if err := checkStopped(ctx, pid, n.Name); err != nil {
			return "", err
		}
		return "frozen (SIGSTOP)", nil
	}
	err = cluster.Ping(p.Addr(), 150*time.Millisecond)
	var ne net.Error
	switch {
	case err == nil:
		return "", noEffect("%s still answers PING on %s", n.Name, p.Addr())
	case errors.As(err, &ne) && ne.Timeout():
		return "frozen (no reply to PING in 150ms)", nil
	}
	return "", noEffect("%s on %s: %v, not a frozen process", n.Name, p.Addr(), err)
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

var (
	_ Fault    = (*ProcessPauseFault)(nil)
	_ Verifier = (*ProcessPauseFault)(nil)
)

// Inject freezes the process; see [PausePID].
func (f *ProcessPauseFault) Inject(ctx context.Context, _ *cluster.Node) error {
	return PausePID(f.PID)
}

// Heal thaws the process; see [ResumePID].
func (f *ProcessPauseFault) Heal(ctx context.Context, _ *cluster.Node) error { return ResumePID(f.PID) }

// Verify returns "frozen (SIGSTOP)" if /proc says the process is stopped,
// and an error wrapping [ErrNoEffect] if it is not or does not exist.
func (f *ProcessPauseFault) Verify(ctx context.Context, _ *cluster.Node) (string, error) {
	if f.PID <= 0 {
		return "", fmt.Errorf("%w: pid %d", cluster.ErrBadFault, f.PID)
	}
	if err := checkStopped(ctx, f.PID, "process"); err != nil {
		return "", err
	}
	return "frozen (SIGSTOP)", nil
}

// Describe returns e.g. "pause pid 4242".
func (f *ProcessPauseFault) Describe() string { return fmt.Sprintf("pause pid %d", f.PID) }

// PausePID freezes the process pid (every thread of it) with SIGSTOP. It
// returns [cluster.ErrBadFault] for a pid that is not positive, and the kill(2)
// error, such as ESRCH for a process that does not exist.
func PausePID(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("%w: pid %d", cluster.ErrBadFault, pid)
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
		return fmt.Errorf("%w: pid %d", cluster.ErrBadFault, pid)
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

// Place accepts the Redis nodes, etcd members and PostgreSQL nodes (see [Placer]).
func (f *PauseFault) Place(t cluster.Topology, node string) error { return onProcess(t, node) }
