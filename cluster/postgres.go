package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// PostgresBinDir is where Debian's postgresql-15 puts initdb, postgres and
// pg_basebackup; lockpick looks there, then on PATH.
const PostgresBinDir = "/usr/lib/postgresql/15/bin"

// PostgresUser is the database role every node is initialized with and
// every client connects as (trust authentication, loopback only).
const PostgresUser = "lockpick"

// A pgNode is one PostgreSQL server (its postmaster and the backends it
// forks) of a Postgres topology, a child process of this one, in its own
// folder: its data directory (data/, on a [Disk]) and nothing else; its log
// is <name>.log beside the folder. Its port is reserved for the cluster's
// life, so a killed node restarts on the same address. PostgreSQL refuses
// to run as root: when lockpick is root, the node runs as the user nobody,
// which owns its data directory.
type pgNode struct {
	name, dir, logPath, bin string
	port                    int
	reservation             *netlink.PortReservation
	disk                    *Disk
	cred                    *syscall.Credential // nil: run as lockpick's user
	primary                 string              // a replica's primary (own address); "" for a primary
	timeout                 time.Duration
	// clock is the server's clock under the clock shim, shim the shim's
	// copy in the node's folder; nil and "" when it runs without it.
	clock *Clock
	shim  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	inited bool
}

var (
	_ Proc        = (*pgNode)(nil)
	_ PIDProc     = (*pgNode)(nil)
	_ DurableProc = (*pgNode)(nil)
	_ ClockedProc = (*pgNode)(nil)
)

// Clock returns the server's clock, or nil when it runs without the clock
// shim. The postmaster maps the clock file on its first clock read, before
// it forks anything, and every backend inherits the shared mapping.
func (p *pgNode) Clock() *Clock { return p.clock }

func (p *pgNode) Name() string    { return p.name }
func (p *pgNode) LogPath() string { return p.logPath }

// Addr returns the server's own address (not its proxy).
func (p *pgNode) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Disk returns the node's data directory.
func (p *pgNode) Disk() *Disk { return p.disk }

// PID returns the postmaster's process id, or 0 when it is not running.
func (p *pgNode) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// pgBin returns the path of a PostgreSQL program, or [ErrBinaryNotFound].
func pgBin(name string) (string, error) {
	if p := filepath.Join(PostgresBinDir, name); fileExists(p) {
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s (apt-get install postgresql-15)", ErrBinaryNotFound, name)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// pgCredential returns the user PostgreSQL runs as: nobody when lockpick
// is root (PostgreSQL refuses root), else nil (lockpick's own user).
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("cluster: PostgreSQL cannot run as root and there is no user nobody: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// command returns a PostgreSQL program's command, run as the node's user,
// its output appended to the node's log.
func (p *pgNode) command(ctx context.Context, prog string, args ...string) (*exec.Cmd, *os.File, error) {
	bin, err := pgBin(prog)
	if err != nil {
		return nil, nil, err
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(pgEnv(), "LC_ALL=C")
	// As for Redis nodes (process.go): die with lockpick, and keep a
	// terminal's Ctrl-C from reaching the node first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: p.cred}
	return cmd, logf, nil
}

// pgEnv is lockpick's environment without PG* variables, which the
// PostgreSQL programs read as settings.
func pgEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// run runs a PostgreSQL program to its end.
func (p *pgNode) run(ctx context.Context, prog string, args ...string) error {
	cmd, logf, err := p.command(ctx, prog, args...)
	if err != nil {
		return err
	}
	defer logf.Close()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", prog, err)
	}
	return nil
}

// initData fills the empty data directory: initdb for a primary,
// pg_basebackup of the primary for a replica (a hot standby streaming from
// it), then lockpick's settings. Start makes every file durable before the
// server runs, so a power loss takes only what the server did not sync.
func (p *pgNode) initData(ctx context.Context) error {
	data := p.disk.Path
	if err := p.own(data); err != nil {
		return err
	}
	var err error
	if p.primary == "" {
		err = p.run(ctx, "initdb", "-D", data, "-U", PostgresUser, "--auth=trust", "--no-sync", "--no-instructions", "-E", "UTF8")
	} else {
		host, port, _ := net.SplitHostPort(p.primary)
		err = p.run(ctx, "pg_basebackup", "-h", host, "-p", port, "-U", PostgresUser, "-D", data,
			"-R", "-X", "stream", "-c", "fast", "--no-sync")
	}
	if err != nil {
		return err
	}
	return p.appendConf()
}

// appendConf writes lockpick's settings at the end of postgresql.conf
// (a replica's copy of its primary's too, so its own port wins) and lets
// loopback clients and replicas in without a password.
func (p *pgNode) appendConf() error {
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		"port = " + strconv.Itoa(p.port),
		"unix_socket_directories = ''",
		"fsync = on",
		"synchronous_commit = on",
		"shared_buffers = 16MB",
		"max_connections = 40",
		"wal_level = replica",
		"max_wal_senders = 4",
		"hot_standby = on",
		"logging_collector = off",
		"log_connections = off",
	}
	// After a crash the server syncs its data folder before recovery: file
	// by file, a restart took 0.6–1.8 s on this machine under load, with
	// one syncfs 0.15–0.55 s. On a lazy disk, FUSE ignores syncfs, and file
	// by file took 3–4 s on an idle machine (an open, a sync_file_range and
	// a close of each of ~1000 files through FUSE, then again with fsync):
	// there the node makes the whole disk durable itself before each start
	// (see Start), which is what that sync does, at once.
	conf = append(conf, "recovery_init_sync_method = syncfs")
	hba := "host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	if err := appendFile(filepath.Join(p.disk.Path, "postgresql.conf"), strings.Join(conf, "\n")+"\n"); err != nil {
		return err
	}
	return appendFile(filepath.Join(p.disk.Path, "pg_hba.conf"), hba)
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

// own gives the node's user the data directory, and every folder above it
// search permission (o+x, no listing), so it can reach it.
func (p *pgNode) own(data string) error {
	if p.cred == nil {
		return nil
	}
	if err := os.Chown(data, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
		return err
	}
	for d := filepath.Dir(data); d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o001); err != nil {
				return err
			}
		}
	}
	return nil
}

// Start starts the server if it is not running (initializing its data
// directory the first time, or after WipeData) and waits until it answers
// a query on its own address. A replica that lost its data is made again
// from its primary.
func (p *pgNode) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited: // died on its own: start it again
			pgReaper.remove(p)
			p.cmd = nil
		default:
			return nil
		}
	}
	if !fileExists(filepath.Join(p.disk.Path, "PG_VERSION")) {
		if err := p.initData(ctx); err != nil {
			return p.startError(err)
		}
	}
	// A new data folder made durable, and PostgreSQL's own sync of its data
	// folder after a crash, which syncfs does not carry through FUSE (see
	// appendConf): what the dead server wrote and a later power loss must
	// keep. A power loss already dropped what was not durable; after a
	// clean stop nothing is left to sync.
	if err := p.disk.Sync(); err != nil {
		return p.startError(err)
	}
	if err := p.launchLocked(); err != nil {
		return p.startError(err)
	}
	if err := p.waitReady(ctx); err != nil {
		_ = p.killLocked()
		return p.startError(err)
	}
	if p.clock != nil {
		if err := checkClockMapped(ctx, p.cmd.Process.Pid, p.clock, p.name, p.shim, "postgres"); err != nil {
			_ = p.killLocked()
			return p.startError(err)
		}
	}
	return nil
}

// launchLocked starts the postmaster without waiting for it, under the
// clock shim if the node has a clock (initdb and pg_basebackup never are).
func (p *pgNode) launchLocked() error {
	cmd, logf, err := p.command(context.Background(), "postgres", "-D", p.disk.Path)
	if err != nil {
		return err
	}
	defer logf.Close()
	if p.clock != nil {
		cmd.Env = clockEnv(cmd.Env, p.shim, p.clock)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	pgReaper.add(p)
	return nil
}

// waitReady polls the server with a query until it answers, it exits, ctx
// ends or the node's start timeout passes.
func (p *pgNode) waitReady(ctx context.Context) error {
	return pollStart(ctx, p.timeout, p.exited, "answer", func() bool {
		return PostgresPing(ctx, p.Addr(), 500*time.Millisecond) == nil
	})
}

func (p *pgNode) startError(err error) error {
	return &StartError{Node: p.name, LogPath: p.logPath, Err: err, LogTail: LogTail(p.logPath, 5)}
}

// Kill kills the postmaster and every process it forked at once (SIGKILL,
// as a host crash would), and waits until all are gone. It is idempotent.
func (p *pgNode) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killLocked()
}

func (p *pgNode) killLocked() error {
	if p.cmd == nil {
		return nil
	}
	pid := p.cmd.Process.Pid
	kids := childPIDs(pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGCONT)
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	<-p.exited
	// The backends are reaped by init once their parent is gone; wait for
	// them to go, so a restart finds no old one holding shared memory.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if !anyAlive(kids) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	pgReaper.remove(p)
	p.cmd = nil
	return nil
}

// signalAll sends sig to the postmaster and the processes it forked.
func (p *pgNode) signalAll(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%w: %s", ErrNotRunning, p.name)
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(pid, sig); err != nil {
		return err
	}
	for _, k := range childPIDs(pid) {
		_ = syscall.Kill(k, sig)
	}
	return nil
}

// Pause freezes the server, its postmaster and every backend (SIGSTOP);
// Resume thaws them (SIGCONT).
func (p *pgNode) Pause() error  { return p.signalAll(syscall.SIGSTOP) }
func (p *pgNode) Resume() error { return p.signalAll(syscall.SIGCONT) }

// WipeData empties the data directory; call it between Kill and Start,
// which then initializes it again (a replica: from its primary).
func (p *pgNode) WipeData() error { return p.disk.Wipe() }

// releasePort gives up the node's port and unmounts its disk; [Cluster.Close]
// calls it once the node is killed.
func (p *pgNode) releasePort() {
	if p.reservation != nil {
		p.reservation.Release()
	}
	_ = p.disk.Close()
}

// childPIDs returns the processes whose parent is pid, read from /proc.
func childPIDs(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var kids []int
	want := strconv.Itoa(pid)
	for _, e := range ents {
		k, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) S ppid ...": comm may hold spaces and parentheses.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == want {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

// anyAlive reports whether any of pids still exists (not a zombie).
func anyAlive(pids []int) bool {
	for _, k := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(k) + "/stat")
		if err == nil && !strings.Contains(string(b), ") Z ") {
			return true
		}
	}
	return false
}

// PostgresPing connects to the server at addr as [PostgresUser] and runs
// SELECT 1 within timeout; nil when it answered.
func PostgresPing(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := PostgresConnect(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

// PostgresConnect opens one connection to the server at addr (host:port)
// as [PostgresUser], to database postgres; close it with Close.
func PostgresConnect(ctx context.Context, addr string) (*pgx.Conn, error) {
	host, port, _ := net.SplitHostPort(addr)
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%s user=%s dbname=postgres sslmode=disable connect_timeout=2", host, port, PostgresUser))
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// pgReaper tracks running PostgreSQL nodes, so [KillAll] (Ctrl-C, SIGTERM)
// stops them and their backends as it stops Redis processes.
var pgReaper = &liveSet[*pgNode]{}

func init() { reapHooks = append(reapHooks, pgReaper.killAll) }

// PostgresInstalled reports whether initdb, postgres and pg_basebackup are
// found (in [PostgresBinDir] or on PATH).
func PostgresInstalled() bool {
	for _, prog := range []string{"initdb", "postgres", "pg_basebackup"} {
		if _, err := pgBin(prog); err != nil {
			return false
		}
	}
	return true
}
