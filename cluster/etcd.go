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
	"time"
)

// An etcdMember is one etcd server process of an etcd topology, run by
// its backend's [MemberRunner] in its own folder: its data directory (data/)
// and nothing else; its log is <name>.log beside the folder, as for Redis
// nodes. Its client and peer ports are reserved for the cluster's life, so
// a killed member restarts on the same addresses, and it advertises the
// addresses of its two proxies (the node's Link and Peer), so clients and
// the other members reach it only through them.
type etcdMember struct {
	memberProc
	clientPort, peerPort int
	clientURL, peerURL   string // advertised: the proxies
	cfg                  *etcdClusterConfig

	// replace follows etcd's procedure for a member whose data is gone
	// (see [Cluster.replaceEtcdMember]); it is set by the cluster.
	replace func(ctx context.Context) error

	booted bool // it has run: a start now joins an existing cluster (mu)
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

// Addr returns the member's own client address (not its proxy).
func (m *etcdMember) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort)) }

// peerAddr returns the member's own peer address (not its proxy).
func (m *etcdMember) peerAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.peerPort))
}

func (m *etcdMember) dataDir() string { return m.disk.Path }

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
	if m.runningLocked() {
		return nil
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
	return m.runLocked(ctx, m.args(state))
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
