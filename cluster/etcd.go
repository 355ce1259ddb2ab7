package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// An etcdMember is one etcd server process of an etcd topology, run by
// its backend's [MemberRunner] in its own folder: its data directory (data/)
// and nothing else; its log is <name>.log beside the folder, as for Redis
// nodes. Its client and peer ports are reserved for the cluster's life, so
// a killed member restarts on the same addresses, and it advertises the
// addresses of its two proxies (the node's Link and Peer), so clients and
// the other members reach it only through them.
type etcdMember struct {
	name, dir, logPath   string
	runner               MemberRunner
	clientPort, peerPort int
	reservations         []*netlink.PortReservation
	clientURL, peerURL   string // advertised: the proxies
	cfg                  *etcdClusterConfig
	timeout              time.Duration // of a start
	disk                 *Disk         // data/: the data directory

	// replace follows etcd's procedure for a member whose data is gone
	// (see [Cluster.replaceEtcdMember]); it is set by the cluster.
	replace func(ctx context.Context) error

	// pid is the running process's id on this host, 0 when none; read
	// without mu, which a start holds for seconds (the peer filters ask
	// during it).
	pid atomic.Int64

	mu      sync.Mutex
	exited  <-chan struct{} // nil while not running; closed when the process exits
	booted  bool            // it has run: a start now joins an existing cluster
	release sync.Once
}

// etcdClusterConfig is what every member of one etcd cluster is started with.
type etcdClusterConfig struct {
	token     string // --initial-cluster-token, unique per cluster
	initial   string // --initial-cluster: name=peer proxy URL, ...
	heartbeat time.Duration
	election  time.Duration
}

var (
	_ Proc        = (*etcdMember)(nil)
	_ PIDProc     = (*etcdMember)(nil)
	_ DurableProc = (*etcdMember)(nil)
)

func (m *etcdMember) Name() string    { return m.name }
func (m *etcdMember) LogPath() string { return m.logPath }

// Addr returns the member's own client address (not its proxy).
func (m *etcdMember) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort)) }

// peerAddr returns the member's own peer address (not its proxy).
func (m *etcdMember) peerAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.peerPort))
}

func (m *etcdMember) dataDir() string { return m.disk.Path }

// Disk returns the member's data directory.
func (m *etcdMember) Disk() *Disk { return m.disk }

// PID returns the running member's process id, or 0 when it is not running.
func (m *etcdMember) PID() int { return int(m.pid.Load()) }

// Start starts the member if it is not running and waits until its peer
// port answers, i.e. the process is up and taking part in the cluster. It
// does not wait for a quorum: a member serves clients only once the
// cluster has one (see [Cluster.WaitEtcdHealthy]). A member that has run
// before restarts with --initial-cluster-state existing; if its data
// directory was wiped, it is first replaced as etcd documents it (removed
// from the membership and added again, see [Cluster.replaceEtcdMember]).
func (m *etcdMember) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exited != nil {
		select {
		case <-m.exited: // died on its own: start it again
			etcdReaper.remove(m)
			m.exited = nil
		default:
			return nil
		}
	}
	state := "new"
	if m.booted {
		state = "existing"
		if !hasEtcdData(m.dataDir()) && m.replace != nil {
			if err := m.replace(ctx); err != nil {
				return m.startError(fmt.Errorf("replace wiped member: %w", err))
			}
		}
	}
	if err := m.launchLocked(ctx, state); err != nil {
		return m.startError(err)
	}
	if err := waitHTTP(ctx, "http://"+m.peerAddr()+"/version", m.timeout, m.exited); err != nil {
		_ = m.killLocked()
		return m.startError(err)
	}
	m.booted = true
	return nil
}

// launchLocked starts the etcd process without waiting for it.
func (m *etcdMember) launchLocked(ctx context.Context, state string) error {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	pid, exited, err := m.runner.Run(ctx, m.args(state))
	if err != nil {
		return err
	}
	m.pid.Store(int64(pid))
	done := make(chan struct{})
	go func() { <-exited; m.pid.Store(0); close(done) }()
	m.exited = done
	etcdReaper.add(m)
	return nil
}

// args returns the member's command line for an --initial-cluster-state.
// The initial cluster flags are ignored by etcd once the data directory
// holds a WAL, and needed when it does not.
func (m *etcdMember) args(state string) []string {
	return []string{
		"--name", m.name,
		"--data-dir", m.dataDir(),
		"--listen-client-urls", "http://" + m.Addr(),
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", "http://" + m.peerAddr(),
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", m.cfg.initial,
		"--initial-cluster-token", m.cfg.token,
		"--initial-cluster-state", state,
		"--heartbeat-interval", strconv.FormatInt(m.cfg.heartbeat.Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(m.cfg.election.Milliseconds(), 10),
		"--logger", "zap",
		"--enable-v2=false",
	}
}

func (m *etcdMember) startError(err error) error {
	return &StartError{Node: m.name, LogPath: m.logPath, Err: err, LogTail: LogTail(m.logPath, 5)}
}

// Kill sends SIGKILL and waits for the member to exit. It is idempotent.
func (m *etcdMember) Kill() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.killLocked()
}

func (m *etcdMember) killLocked() error {
	if m.exited == nil {
		return nil
	}
	if err := m.runner.Signal(syscall.SIGKILL); err != nil {
		select {
		case <-m.exited: // it was gone already
		case <-time.After(2 * time.Second):
			return fmt.Errorf("cluster: kill %s: %w", m.name, err)
		}
	}
	<-m.exited
	etcdReaper.remove(m)
	m.exited = nil
	return nil
}

func (m *etcdMember) signal(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exited == nil {
		return fmt.Errorf("%w: %s", ErrNotRunning, m.name)
	}
	return m.runner.Signal(sig)
}

// Pause freezes the member (SIGSTOP); Resume thaws it (SIGCONT).
func (m *etcdMember) Pause() error  { return m.signal(syscall.SIGSTOP) }
func (m *etcdMember) Resume() error { return m.signal(syscall.SIGCONT) }

// WipeData empties the member's data directory (WAL, snapshots, bolt
// database); call it between Kill and Start, which then replaces the
// member (see [Cluster.replaceEtcdMember]).
func (m *etcdMember) WipeData() error { return m.disk.Wipe() }

// releasePort gives up the member's port reservations and what its runner
// holds (a container); [Cluster.Close] calls it once the member is killed.
func (m *etcdMember) releasePort() {
	for _, r := range m.reservations {
		r.Release()
	}
	m.release.Do(func() {
		_ = m.runner.Release()
		if m.disk != nil {
			_ = m.disk.Close()
		}
	})
}

// hasEtcdData reports whether dir holds an etcd member's data (its WAL).
func hasEtcdData(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "member", "wal"))
	return err == nil
}

// waitHTTP polls url with GET until it answers 200, the process exits,
// ctx ends or timeout passes.
func waitHTTP(ctx context.Context, url string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: 200 * time.Millisecond}
	for {
		if resp, err := hc.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("process exited during start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return ErrNotReady
		}
	}
}

// etcdReaper tracks running etcd members, so [KillAll] (Ctrl-C, SIGTERM)
// stops them as it stops Redis processes.
var etcdReaper = &liveSet[*etcdMember]{}

func init() { reapHooks = append(reapHooks, etcdReaper.killAll) }
