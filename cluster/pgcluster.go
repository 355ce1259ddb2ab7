package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster/netlink"
)

// pgStartTimeout bounds one start of a PostgreSQL node (initdb or
// pg_basebackup, then the server's recovery): a liveness bound, generous
// for a loaded machine; starts take 1-3 s at rest (docs/postgres.md).
const pgStartTimeout = 60 * time.Second

// startPostgres starts topo.Postgres PostgreSQL nodes on backend, which
// must be the process backend: p1 a primary, p2 (if asked) a hot standby
// streaming from it, made with pg_basebackup. It is the whole of [Start]
// for a topology with Postgres set.
func startPostgres(ctx context.Context, backend Backend, topo Topology) (_ *Cluster, err error) {
	pb, ok := backend.(*ProcessBackend)
	switch {
	case topo.Masters > 0 || topo.Replicas > 0 || topo.Shards > 0 || topo.Sentinels > 0 || topo.Etcd > 0:
		return nil, fmt.Errorf("%w: a PostgreSQL topology has no Redis nodes or etcd members", ErrBadTopology)
	case topo.Postgres > 2:
		return nil, fmt.Errorf("%w: %d PostgreSQL nodes (1: a primary; 2: a primary and a replica)", ErrBadTopology, topo.Postgres)
	case topo.Persistence != "":
		return nil, fmt.Errorf("%w: PostgreSQL nodes take no persistence setting (they fsync their WAL)", ErrBadTopology)
	case !ok:
		return nil, fmt.Errorf("%w: PostgreSQL nodes run on the process backend only, not %T", ErrBadTopology, backend)
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	c := &Cluster{topo: topo, backend: backend, proxies: netlink.NewProxies()}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	for i := 1; i <= topo.Postgres; i++ {
		n, err := c.newPostgresNode(pb, "p"+strconv.Itoa(i), cred)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.Postgres = append(c.Postgres, n)
		c.mu.Unlock()
		if err := n.Proc.Start(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newPostgresNode reserves a node's port, makes its disk and puts a proxy
// in front of it; a node after the first is a replica of the first.
func (c *Cluster) newPostgresNode(pb *ProcessBackend, name string, cred *syscall.Credential) (*Node, error) {
	dir := filepath.Join(pb.Dir, name)
	p := &pgNode{name: name, dir: dir, logPath: filepath.Join(pb.Dir, name+".log"), cred: cred,
		timeout: max(pb.StartTimeout, pgStartTimeout)}
	if len(c.Postgres) > 0 {
		p.primary = c.Postgres[0].Proc.Addr()
	}
	if pb.ClockShim != "" {
		if err := p.newClock(pb.ClockShim); err != nil {
			return nil, err
		}
	}
	var err error
	if p.disk, err = NewDisk(filepath.Join(dir, "data"), name, LazyIf(pb.LazyDisks)); err != nil {
		return nil, err
	}
	if p.reservation, err = netlink.ReservePort(); err != nil {
		_ = p.disk.Close()
		return nil, err
	}
	p.port = p.reservation.Port()
	n := &Node{Name: name, Proc: p, cluster: c}
	if n.Link, err = c.proxies.Add(name, p.Addr()); err != nil {
		p.releasePort()
		return nil, err
	}
	return n, nil
}

// newClock gives the node a clock file and a copy of the clock shim at
// shim, both in its folder: the server runs as nobody when lockpick is
// root, and the shim's cache (under root's home) is out of its reach.
func (p *pgNode) newClock(shim string) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	b, err := os.ReadFile(shim)
	if err != nil {
		return fmt.Errorf("cluster: clock shim: %w", err)
	}
	p.shim = filepath.Join(p.dir, "clockshim.so")
	if err := os.WriteFile(p.shim, b, 0o644); err != nil {
		return fmt.Errorf("cluster: clock shim: %w", err)
	}
	p.clock, err = NewClock(filepath.Join(p.dir, "clock"))
	return err
}

// PostgresIndex returns i for a PostgreSQL node named "p<i>" of t, else 0.
func (t Topology) PostgresIndex(node string) int { return memberIndex(node, "p", t.Postgres) }

// IsPostgresNode reports whether n is a PostgreSQL node.
func IsPostgresNode(n *Node) bool {
	_, ok := n.Proc.(*pgNode)
	return ok
}

// PostgresAddrs returns the client addresses of the PostgreSQL nodes (their
// proxies, p1 first).
func (c *Cluster) PostgresAddrs() []string { return linkAddrs(c.Postgres) }

// PostgresPromote makes the hot standby n a primary with pg_promote(),
// asked on its own address, and returns once it has left recovery (at
// most 10 s). It returns an error if n is no PostgreSQL node or refused.
func PostgresPromote(ctx context.Context, n *Node) error {
	if !IsPostgresNode(n) {
		return fmt.Errorf("cluster: %s is not a PostgreSQL node", n.Name)
	}
	conn, err := PostgresConnect(ctx, n.Proc.Addr())
	if err != nil {
		return fmt.Errorf("cluster: promote %s: %w", n.Name, err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 10)").Scan(&ok); err != nil {
		return fmt.Errorf("cluster: promote %s: %w", n.Name, err)
	}
	if !ok {
		return fmt.Errorf("cluster: promote %s: pg_promote returned false (not promoted within 10s)", n.Name)
	}
	return nil
}

// PostgresInRecovery reports whether the node n, asked on its own address
// within timeout, is a standby (pg_is_in_recovery()).
func PostgresInRecovery(ctx context.Context, n *Node, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := PostgresConnect(ctx, n.Proc.Addr())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var rec bool
	err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec)
	return rec, err
}
