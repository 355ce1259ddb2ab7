package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// ProcessBackend runs redis-server and redis-sentinel as child processes of
// this one, each in its own directory under Dir.
type ProcessBackend struct {
	// Dir holds one subdirectory per process: config, log, data.
	Dir string
	// ServerBin and SentinelBin are the binaries to run.
	// default: redis-server and redis-sentinel from PATH.
	ServerBin, SentinelBin string
	// StartTimeout bounds how long a process may take to answer PING: a
	// liveness bound, generous so that a loaded machine never crosses it (a
	// process that dies returns at once). default: 30s.
	StartTimeout time.Duration
	// ClockShim is the path of the clock shim library ([BuildClockShim]).
	// When set, every process is started with it preloaded, so its clock can
	// be moved with faults.ClockJumpFault and faults.ClockRateFault. default: "" (no shim).
	ClockShim string
	// LazyDisks puts every redis-server's data folder on a lazy filesystem
	// ([NewDisk]), so faults.PowerLossFault can drop what it had not synced.
	// default: false (plain folders).
	LazyDisks bool

	mu    sync.Mutex
	procs []*process
}

var _ Backend = (*ProcessBackend)(nil)

// NewProcessBackend returns a backend that keeps its processes' files under dir.
// It returns [ErrBinaryNotFound] when redis-server or redis-sentinel is missing.
func NewProcessBackend(dir string) (*ProcessBackend, error) {
	// Redis resolves its log file after changing to its data directory, so
	// every path it is given must be absolute.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b := &ProcessBackend{Dir: dir, StartTimeout: 30 * time.Second}
	if b.ServerBin, err = exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("%w: redis-server (apt-get install redis-server)", ErrBinaryNotFound)
	}
	if b.SentinelBin, err = exec.LookPath("redis-sentinel"); err != nil {
		return nil, fmt.Errorf("%w: redis-sentinel (apt-get install redis-sentinel)", ErrBinaryNotFound)
	}
	return b, os.MkdirAll(dir, 0o755)
}

// Launch starts the process. With spec.Port zero it reserves a loopback port
// no other lockpick run can take (see [netlink.ReservePort]) and keeps it until Close, so
// the process can be killed and restarted on it; if something outside
// lockpick grabbed the port first, it tries again with another one.
func (b *ProcessBackend) Launch(ctx context.Context, spec ProcSpec) (Proc, error) {
	dir := filepath.Join(b.Dir, spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bin := b.ServerBin
	if spec.Sentinel {
		bin = b.SentinelBin
	}
	p := &process{name: spec.Name, bin: bin, dir: dir, config: spec.Config, timeout: b.StartTimeout,
		sentinel: spec.Sentinel, shim: b.ClockShim}
	p.logPath = filepath.Join(b.Dir, spec.Name+".log")
	var err error
	if p.disk, err = NewDisk(filepath.Join(dir, "data"), spec.Name, LazyIf(b.LazyDisks && !spec.Sentinel)); err != nil {
		return nil, &StartError{Node: p.name, LogPath: p.logPath, Err: err}
	}
	if p.shim != "" {
		if p.clock, err = NewClock(filepath.Join(dir, "clock")); err != nil {
			_ = p.disk.Close()
			return nil, &StartError{Node: p.name, LogPath: p.logPath, Err: err}
		}
	}
	p.port, p.reservation, err = StartOnPort(spec.Port, p.logPath, func(port int) error {
		p.port = port
		return p.Start(ctx)
	})
	if err != nil {
		_ = p.disk.Close()
		return nil, err
	}
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
	return p, nil
}

// Close kills every process the backend launched and releases their ports.
func (b *ProcessBackend) Close() error {
	b.mu.Lock()
	procs := b.procs
	b.procs = nil
	b.mu.Unlock()
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.Kill(), p.disk.Close())
		p.releasePort()
	}
	return errors.Join(errs...)
}

type process struct {
	name, bin, dir, logPath string
	shim                    string
	disk                    *Disk
	config                  []string
	sentinel                bool
	port                    int
	reservation             *netlink.PortReservation
	clock                   *Clock
	timeout                 time.Duration

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

var (
	_ Proc        = (*process)(nil)
	_ ClockedProc = (*process)(nil)
	_ PIDProc     = (*process)(nil)
	_ DurableProc = (*process)(nil)
)

func (p *process) Name() string    { return p.name }
func (p *process) Addr() string    { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }
func (p *process) LogPath() string { return p.logPath }

// Clock returns the process's clock, or nil when the backend has no ClockShim.
func (p *process) Clock() *Clock { return p.clock }

// PID returns the running process's id, or 0 when it is not running.
func (p *process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *process) writeConfig() (string, error) {
	return WriteRedisConfig(p.dir, p.disk.Path, p.port, p.logPath, p.sentinel, p.config)
}

// WriteRedisConfig writes dir/redis.conf for a node listening on loopback at
// port, keeping its data in dataDir, logging to logPath, with no RDB
// snapshots unless extra asks, and returns its path. Both backends use it.
func WriteRedisConfig(dir, dataDir string, port int, logPath string, sentinel bool, extra []string) (string, error) {
	lines := []string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(port),
		"dir " + dataDir,
		"logfile " + logPath,
		"daemonize no",
		"protected-mode no",
	}
	if !sentinel {
		lines = append(lines, `save ""`)
	}
	lines = append(lines, extra...)
	path := filepath.Join(dir, "redis.conf")
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// Start starts the process on its port and waits until it answers PING.
// If the port is briefly held elsewhere (a forked child of this or another
// process that has not yet exec'd or exited may still hold a copy of the
// old listening socket), it tries again for up to a second.
func (p *process) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited: // died on its own: start it again
			reaper.remove(p)
			p.cmd = nil
		default:
			return nil
		}
	}
	deadline := time.Now().Add(time.Second)
	for {
		from := logSize(p.logPath)
		err := p.startLocked(ctx)
		if err == nil || !portTakenSince(p.logPath, from) || time.Now().After(deadline) {
			return err
		}
		if err := SleepCtx(ctx, 20*time.Millisecond); err != nil {
			return p.startError(err)
		}
	}
}

func (p *process) startLocked(ctx context.Context) error {
	conf, err := p.writeConfig()
	if err != nil {
		return p.startError(err)
	}
	args := []string{conf}
	if p.sentinel {
		args = append(args, "--sentinel")
	}
	// Errors before the logfile directive is read (a bad config) go to
	// stderr, so stderr goes to the same log.
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return p.startError(err)
	}
	defer logf.Close()
	cmd := exec.Command(p.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = p.shimEnv()
	// Pdeathsig kills the node if lockpick itself dies without cleaning up
	// (SIGKILL, a panic, an unhandled SIGINT); Setpgid keeps a terminal's
	// Ctrl-C from reaching the node before lockpick decides what to do.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return p.startError(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	reaper.add(p)
	if err := WaitReady(ctx, p.Addr(), p.timeout, exited); err != nil {
		p.killLocked()
		return p.startError(err)
	}
	if p.clock != nil {
		if err := checkClockMapped(ctx, cmd.Process.Pid, p.clock, p.name, p.shim, p.bin); err != nil {
			p.killLocked()
			return p.startError(err)
		}
	}
	return nil
}

// shimEnv returns the environment of the process: lockpick's own, plus
// LD_PRELOAD and the clock file when it runs under the clock shim, or nil.
func (p *process) shimEnv() []string {
	if p.clock == nil {
		return nil
	}
	return clockEnv(os.Environ(), p.shim, p.clock)
}

// Disk returns the node's data folder.
func (p *process) Disk() *Disk { return p.disk }

func (p *process) startError(err error) error {
	return &StartError{Node: p.name, LogPath: p.logPath, Err: err, LogTail: LogTail(p.logPath, 5)}
}

func (p *process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killLocked()
	return nil
}

func (p *process) killLocked() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused process must still die
	_ = p.cmd.Process.Kill()
	// Its forked children (a BGSAVE, an AOF rewrite) die with it, as on a
	// crashed host: none may rename a file into place afterwards.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	reaper.remove(p)
	p.cmd = nil
}

func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%w: %s", ErrNotRunning, p.name)
	}
	return p.cmd.Process.Signal(sig)
}

func (p *process) Pause() error  { return p.signal(syscall.SIGSTOP) }
func (p *process) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *process) WipeData() error { return p.disk.Wipe() }

// releasePort gives up the port reservation once the process is done for.
func (p *process) releasePort() {
	if p.reservation != nil {
		p.reservation.Release()
	}
}

// StartOnPort runs start on port want, or, with want zero, on a port
// reserved for this run (see [netlink.ReservePort]). If the log shows something outside
// lockpick took a reserved port first, it tries again with another, three
// times at most. It returns the port and its reservation (nil for want).
func StartOnPort(want int, logPath string, start func(port int) error) (int, *netlink.PortReservation, error) {
	var err error
	for range 3 {
		port, res := want, (*netlink.PortReservation)(nil)
		if port == 0 {
			if res, err = netlink.ReservePort(); err != nil {
				return 0, nil, err
			}
			port = res.Port()
		}
		from := logSize(logPath)
		if err = start(port); err == nil {
			return port, res, nil
		}
		if res != nil {
			res.Release()
		}
		if want != 0 || !portTakenSince(logPath, from) {
			break
		}
	}
	return 0, nil, err
}

// portTakenSince reports whether the log at path, from byte offset from on,
// says the port was in use.
func portTakenSince(path string, from int64) bool {
	b, _ := os.ReadFile(path)
	if from > int64(len(b)) {
		from = 0
	}
	return strings.Contains(string(b[from:]), "Address already in use")
}

func logSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// LogTail returns the last n lines of the file at path, or "" if unreadable.
func LogTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// WaitReady polls addr with PING until it answers +PONG, the process exits,
// ctx ends or timeout passes.
func WaitReady(ctx context.Context, addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		if Ping(addr, 200*time.Millisecond) == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("process exited during start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return ErrNotReady
		}
	}
}

// Ping sends a bare RESP PING to addr and returns nil on a PONG within
// timeout, avoiding a client library for a readiness probe.
func Ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("unexpected reply %q", buf[:n])
	}
	return nil
}

// SleepCtx waits d or until ctx ends, returning ctx's error in that case.
func SleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
