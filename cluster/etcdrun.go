package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// An EtcdBackend is a [Backend] that runs etcd members too: [Start] asks
// it for one [EtcdPlace] per member of a topology with Etcd set. The
// process backend is one (members are children of this process), and so
// is package dockerbackend's (members are containers).
type EtcdBackend interface {
	Backend
	// EtcdPlace returns where member name keeps its files and what runs
	// its etcd process. It returns [ErrBinaryNotFound] without etcd.
	EtcdPlace(ctx context.Context, name string) (EtcdPlace, error)
}

// An EtcdPlace is where and how one etcd member runs.
type EtcdPlace struct {
	// Dir is the member's folder on this host; its data directory is
	// Dir/data. LogPath is its log, on this host too.
	Dir, LogPath string
	// StartTimeout bounds one start of the member's process.
	StartTimeout time.Duration
	// Runner runs the member's etcd process.
	Runner EtcdRunner
	// LazyDisk puts the data directory on a lazy filesystem ([NewDisk]),
	// so the member can lose power.
	LazyDisk bool
}

// An EtcdRunner runs one etcd member's server process, one run at a time;
// the member (cluster's) decides its flags, when it runs and what it
// keeps. Its process must be one of this host, so that its pid is
// meaningful here: the peer filters read its sockets from /proc.
type EtcdRunner interface {
	// Run starts etcd with args, its output going to the member's log,
	// and returns its pid on this host and a channel closed once it has
	// exited. It does not wait for etcd to serve.
	Run(ctx context.Context, args []string) (pid int, exited <-chan struct{}, err error)
	// Signal sends sig to the running process. SIGKILL kills it even
	// while it is stopped (SIGSTOP).
	Signal(sig syscall.Signal) error
	// Release frees what the runner holds besides the member's files (a
	// container); the process has been killed. It is idempotent.
	Release() error
}

// EtcdPlace makes member name a child process of this one, in Dir/name,
// logging to Dir/name.log.
func (b *ProcessBackend) EtcdPlace(ctx context.Context, name string) (EtcdPlace, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return EtcdPlace{}, fmt.Errorf("%w: etcd (apt-get install etcd-server)", ErrBinaryNotFound)
	}
	pl := EtcdPlace{Dir: filepath.Join(b.Dir, name), LogPath: filepath.Join(b.Dir, name+".log"),
		StartTimeout: b.StartTimeout, LazyDisk: b.LazyDisks}
	pl.Runner = &etcdProcRunner{bin: bin, dir: pl.Dir, logPath: pl.LogPath}
	return pl, nil
}

// An etcdProcRunner runs etcd as a child process of this one.
type etcdProcRunner struct {
	bin, dir, logPath string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Run starts etcd in the member's folder, its output appended to the log.
func (r *etcdProcRunner) Run(ctx context.Context, args []string) (int, <-chan struct{}, error) {
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, nil, err
	}
	defer logf.Close()
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = etcdEnv()
	// As for Redis nodes (process.go): die with lockpick, and keep a
	// terminal's Ctrl-C from reaching the member first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	return cmd.Process.Pid, exited, nil
}

// Signal signals the process; SIGKILL goes to its process group, after a
// SIGCONT, since a stopped process must still die.
func (r *etcdProcRunner) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		return errors.New("etcd never ran")
	}
	if sig != syscall.SIGKILL {
		return cmd.Process.Signal(sig)
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// Release does nothing: a child process holds nothing once killed.
func (r *etcdProcRunner) Release() error { return nil }

// etcdEnv is lockpick's environment without ETCD_* variables, which etcd
// reads as flags.
func etcdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	return env
}
