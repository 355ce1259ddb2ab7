package cluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A MemberPlace is where and how one member of a consensus ensemble (an
// etcd member, a ZooKeeper server) runs; an [EtcdBackend] or a
// [ZooKeeperBackend] gives one per member.
type MemberPlace struct {
	// Dir is the member's folder on this host; its data directory is
	// Dir/data. LogPath is its log, on this host too.
	Dir, LogPath string
	// StartTimeout bounds one start of the member's process.
	StartTimeout time.Duration
	// Runner runs the member's server process.
	Runner MemberRunner
	// LazyDisk puts the data directory on a lazy filesystem ([NewDisk]),
	// so the member can lose power.
	LazyDisk bool
	// Clock, when set, is the clock the Runner's process reads: it runs
	// under the clock shim ([ProcessBackend.ClockShim]), and the member
	// checks at each start that the process mapped the clock's file.
	// ClockShim is the shim's path, for that check's errors.
	Clock     *Clock
	ClockShim string
}

// A MemberRunner runs one member's server process, one run at a time; the
// member (cluster's) decides its arguments, when it runs and what it
// keeps. Its process must be one of this host, so that its pid is
// meaningful here: a pause's check reads its state from /proc, and etcd's
// peer filters read its sockets.
type MemberRunner interface {
	// Run starts the server with args (what follows the program: etcd's
	// flags, the JVM's options and ZooKeeper's main class), its output
	// going to the member's log, and returns its pid on this host and a
	// channel closed once it has exited. It does not wait for it to serve.
	Run(ctx context.Context, args []string) (pid int, exited <-chan struct{}, err error)
	// Signal sends sig to the running process. SIGKILL kills it even
	// while it is stopped (SIGSTOP).
	Signal(sig syscall.Signal) error
	// Release frees what the runner holds besides the member's files (a
	// container); the process has been killed. It is idempotent.
	Release() error
}

// A procRunner runs a member's server as a child process of this one, in
// the member's folder, its output appended to the log.
type procRunner struct {
	bin, dir, logPath string
	env               []string // the child's environment

	mu  sync.Mutex
	cmd *exec.Cmd
}

var _ MemberRunner = (*procRunner)(nil)

// Run starts bin with args.
func (r *procRunner) Run(ctx context.Context, args []string) (int, <-chan struct{}, error) {
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, nil, err
	}
	defer logf.Close()
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = r.env
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
func (r *procRunner) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		return errors.New("the member never ran")
	}
	if sig != syscall.SIGKILL {
		return cmd.Process.Signal(sig)
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// Release does nothing: a child process holds nothing once killed.
func (r *procRunner) Release() error { return nil }

// envWithout returns lockpick's environment without the variables whose
// names start with one of prefixes (those the member's program reads as
// settings).
func envWithout(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			env = append(env, kv)
		}
	}
	return env
}
