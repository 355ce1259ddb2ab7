package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// A memberProc is what an etcd member and a ZooKeeper member share: a
// server process its [MemberRunner] starts, watched until it exits,
// killed, frozen and thawed by signal, and released with its ports and
// its disk. Each member embeds one and adds how it starts and answers.
type memberProc struct {
	name, dir, logPath string
	runner             MemberRunner
	reservations       []*netlink.PortReservation
	disk               *Disk         // data/: the data directory
	timeout            time.Duration // of a start

	// pid is the running process's id on this host, 0 when none; read
	// without mu, which a start holds for seconds (etcd's peer filters ask
	// during it).
	pid atomic.Int64

	mu      sync.Mutex
	exited  <-chan struct{} // nil while not running; closed when the process exits
	release sync.Once
}

// memberReaper tracks the running members, so [KillAll] (Ctrl-C, SIGTERM)
// kills them.
var memberReaper = &liveSet[*memberProc]{}

func init() { reapHooks = append(reapHooks, memberReaper.killAll) }

func (p *memberProc) Name() string    { return p.name }
func (p *memberProc) LogPath() string { return p.logPath }

// Disk returns the member's data directory.
func (p *memberProc) Disk() *Disk { return p.disk }

// PID returns the running member's process id, or 0 when it is not running.
func (p *memberProc) PID() int { return int(p.pid.Load()) }

// WipeData empties the member's data directory; call it between Kill and
// Start (what a start then does about it is the member's: see each).
func (p *memberProc) WipeData() error { return p.disk.Wipe() }

// reserve reserves a free port for each of ports and stores it there.
func (p *memberProc) reserve(ports ...*int) error {
	for _, port := range ports {
		r, err := netlink.ReservePort()
		if err != nil {
			return err
		}
		p.reservations = append(p.reservations, r)
		*port = r.Port()
	}
	return nil
}

// runningLocked reports, with mu held, whether the process runs; one that
// died on its own is forgotten, so that a start runs it again.
func (p *memberProc) runningLocked() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		memberReaper.remove(p)
		p.exited = nil
		return false
	default:
		return true
	}
}

// runLocked starts the process with args, with mu held, without waiting
// for it to serve, and watches it until it exits.
func (p *memberProc) runLocked(ctx context.Context, args []string) error {
	pid, exited, err := p.runner.Run(ctx, args)
	if err != nil {
		return err
	}
	p.pid.Store(int64(pid))
	done := make(chan struct{})
	go func() { <-exited; p.pid.Store(0); close(done) }()
	p.exited = done
	memberReaper.add(p)
	return nil
}

func (p *memberProc) startError(err error) error {
	return &StartError{Node: p.name, LogPath: p.logPath, Err: err, LogTail: LogTail(p.logPath, 5)}
}

// Kill sends SIGKILL (which kills a paused member too) and waits until the
// process has exited. It is idempotent.
func (p *memberProc) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killLocked()
}

func (p *memberProc) killLocked() error {
	if p.exited == nil {
		return nil
	}
	if err := p.runner.Signal(syscall.SIGKILL); err != nil {
		select {
		case <-p.exited: // it was gone already
		case <-time.After(2 * time.Second):
			return fmt.Errorf("cluster: kill %s: %w", p.name, err)
		}
	}
	<-p.exited
	memberReaper.remove(p)
	p.exited = nil
	return nil
}

func (p *memberProc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		return fmt.Errorf("%w: %s", ErrNotRunning, p.name)
	}
	return p.runner.Signal(sig)
}

// Pause freezes the member (SIGSTOP: a JVM's every thread too); Resume
// thaws it (SIGCONT).
func (p *memberProc) Pause() error  { return p.signal(syscall.SIGSTOP) }
func (p *memberProc) Resume() error { return p.signal(syscall.SIGCONT) }

// releasePort gives up the member's ports, what its runner holds (a
// container) and its disk (a lazy one is unmounted); [Cluster.Close] calls
// it once the member is killed.
func (p *memberProc) releasePort() {
	for _, r := range p.reservations {
		r.Release()
	}
	p.release.Do(func() {
		if p.runner != nil {
			_ = p.runner.Release()
		}
		if p.disk != nil {
			_ = p.disk.Close()
		}
	})
}
