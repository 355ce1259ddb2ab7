package cluster

import (
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
)

// ProcessBackend runs redis-server and redis-sentinel as child processes of
// this one, each in its own directory under Dir.
type ProcessBackend struct {
	// Dir holds one subdirectory per process: config, log, data.
	Dir string
	// ServerBin and SentinelBin are the binaries to run.
	// default: redis-server and redis-sentinel from PATH.
	ServerBin, SentinelBin string
	// StartTimeout bounds how long a process may take to answer PING.
	// default: 5s.
	StartTimeout time.Duration

	mu    sync.Mutex
	procs []*process
}

var _ Backend = (*ProcessBackend)(nil)

// NewProcessBackend returns a backend that keeps its processes' files under dir.
// It returns [ErrBinaryNotFound] when redis-server or redis-sentinel is missing.
func NewProcessBackend(dir string) (*ProcessBackend, error) {
	b := &ProcessBackend{Dir: dir, StartTimeout: 5 * time.Second}
	var err error
	if b.ServerBin, err = exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("%w: redis-server (apt-get install redis-server)", ErrBinaryNotFound)
	}
	if b.SentinelBin, err = exec.LookPath("redis-sentinel"); err != nil {
		return nil, fmt.Errorf("%w: redis-sentinel (apt-get install redis-sentinel)", ErrBinaryNotFound)
	}
	return b, os.MkdirAll(dir, 0o755)
}

// Launch starts the process on a free loopback port. If the port was taken
// between picking and binding, it tries again with another one.
func (b *ProcessBackend) Launch(ctx context.Context, spec ProcSpec) (Proc, error) {
	dir := filepath.Join(b.Dir, spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bin := b.ServerBin
	if spec.Sentinel {
		bin = b.SentinelBin
	}
	p := &process{name: spec.Name, bin: bin, dir: dir, config: spec.Config, timeout: b.StartTimeout}
	p.logPath = filepath.Join(b.Dir, spec.Name+".log")
	var err error
	for range 3 {
		if p.port = spec.Port; p.port == 0 {
			if p.port, err = freePort(); err != nil {
				return nil, err
			}
		}
		if err = p.Start(ctx); err == nil || spec.Port != 0 || !p.portTaken() {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
	return p, nil
}

// Close kills every process the backend launched.
func (b *ProcessBackend) Close() error {
	b.mu.Lock()
	procs := b.procs
	b.procs = nil
	b.mu.Unlock()
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.Kill())
	}
	return errors.Join(errs...)
}

type process struct {
	name, bin, dir, logPath string
	config                  []string
	port                    int
	timeout                 time.Duration

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

func (p *process) Name() string    { return p.name }
func (p *process) Addr() string    { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }
func (p *process) LogPath() string { return p.logPath }

func (p *process) writeConfig() (string, error) {
	lines := []string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(p.port),
		"dir " + p.dir,
		"logfile " + p.logPath,
		"daemonize no",
		"protected-mode no",
	}
	if !strings.Contains(p.bin, "sentinel") {
		lines = append(lines, `save ""`)
	}
	lines = append(lines, p.config...)
	path := filepath.Join(p.dir, "redis.conf")
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func (p *process) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return nil
	}
	conf, err := p.writeConfig()
	if err != nil {
		return &StartError{Node: p.name, LogPath: p.logPath, Err: err}
	}
	args := []string{conf}
	if strings.Contains(p.bin, "sentinel") {
		args = append(args, "--sentinel")
	}
	cmd := exec.Command(p.bin, args...)
	// Pdeathsig kills the node if lockpick itself dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return &StartError{Node: p.name, LogPath: p.logPath, Err: err}
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	reaper.add(p)
	if err := waitReady(ctx, p.Addr(), p.timeout, exited); err != nil {
		p.killLocked()
		return &StartError{Node: p.name, LogPath: p.logPath, Err: err}
	}
	return nil
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
	<-p.exited
	reaper.remove(p)
	p.cmd = nil
}

func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("cluster: %s is not running", p.name)
	}
	return p.cmd.Process.Signal(sig)
}

func (p *process) Pause() error  { return p.signal(syscall.SIGSTOP) }
func (p *process) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *process) WipeData() error {
	for _, f := range []string{"dump.rdb", "appendonlydir", "appendonly.aof"} {
		if err := os.RemoveAll(filepath.Join(p.dir, f)); err != nil {
			return err
		}
	}
	return nil
}

func (p *process) portTaken() bool {
	b, _ := os.ReadFile(p.logPath)
	return strings.Contains(string(b), "Address already in use")
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cluster: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls addr with PING until it answers +PONG, the process exits,
// ctx ends or timeout passes.
func waitReady(ctx context.Context, addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		if ping(addr, 200*time.Millisecond) == nil {
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

// ping sends a bare RESP PING, avoiding a client library for a readiness probe.
func ping(addr string, timeout time.Duration) error {
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
