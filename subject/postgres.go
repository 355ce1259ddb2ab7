package subject

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// PostgreSQL's session advisory locks through pgx, on a PostgreSQL
// topology: "pg-advisory" takes pg_try_advisory_lock(k) (acquire: try) or
// pg_advisory_lock(k) (acquire: block) on a connection the client holds for
// the lease, and releases with pg_advisory_unlock(k). The lock lives as long
// as the session: it has no TTL and never expires, and the client learns it
// lost it only when a statement on its connection fails (the release).
// "pg-advisory-fenced" also increments a counter in the same session under
// the lock (lockpick_fence) and presents it as the fencing token, so a later
// holder on the same primary always has a larger one.
func init() {
	tr := scenario.Traits{Shape: scenario.ShapePostgres, Honours: []string{"fenced", "acquire"}}
	Register("pg-advisory", tr, func(c Config) Subject { return &pgSubject{cfg: c} })
	Register("pg-advisory-fenced", tr, func(c Config) Subject { c.Fenced = true; return &pgSubject{cfg: c} })
}

// pgNoExpiry stands for the deadline of a lock that has none: the worker
// protocol needs one, and no trial lasts an hour.
const pgNoExpiry = time.Hour

// A pgSubject is one client's PostgreSQL advisory lock: one connection per
// node, kept between acquires; the one that granted holds the lock.
type pgSubject struct {
	cfg   Config
	conns map[string]*pgx.Conn // by node name
	node  string               // the node of the last acquire
}

var (
	_ Subject   = (*pgSubject)(nil)
	_ Warmer    = (*pgSubject)(nil)
	_ io.Closer = (*pgSubject)(nil)
)

// lockID is the advisory lock's 64-bit key: a hash of the scenario's key.
func (s *pgSubject) lockID() int64 {
	h := fnv.New64a()
	h.Write([]byte(s.cfg.Lock.Key))
	return int64(h.Sum64())
}

// WarmUp connects to the primary and makes the fence counter. An error
// wraps [ErrUnusable].
func (s *pgSubject) WarmUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, node, err := s.primary(ctx)
	if err != nil {
		return fmt.Errorf("%w: PostgreSQL: %w", ErrUnusable, err)
	}
	s.node = node
	if !s.cfg.Fenced {
		return nil
	}
	// Clients warm up at once: CREATE TABLE IF NOT EXISTS can still collide.
	for range 5 {
		if _, err = conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS lockpick_fence (k bigint PRIMARY KEY, n bigint NOT NULL)"); err == nil {
			_, err = conn.Exec(ctx, "INSERT INTO lockpick_fence VALUES ($1, 0) ON CONFLICT DO NOTHING", s.lockID())
		}
		if err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%w: PostgreSQL fence table: %w", ErrUnusable, err)
}

// conn returns the client's connection to node, dialling it if needed.
func (s *pgSubject) conn(ctx context.Context, n NodeAddr) (*pgx.Conn, error) {
	if c := s.conns[n.Name]; c != nil && !c.IsClosed() {
		return c, nil
	}
	if s.conns == nil {
		s.conns = map[string]*pgx.Conn{}
	}
	c, err := cluster.PostgresConnect(ctx, n.Addr)
	if err != nil {
		return nil, err
	}
	s.conns[n.Name] = c
	return c, nil
}

// drop closes the connection to node (it failed): the server frees a lock
// it held once it sees the connection die.
func (s *pgSubject) drop(node string) {
	if c := s.conns[node]; c != nil {
		_ = c.Close(context.Background())
		delete(s.conns, node)
	}
}

// primary returns a connection to the newest primary: the last node that
// is not a standby (p2 once promoted, as a virtual IP moved to it would),
// else p1. A client holding the lock keeps its own connection.
func (s *pgSubject) primary(ctx context.Context) (*pgx.Conn, string, error) {
	nodes := s.cfg.Target.view.Postgres
	if len(nodes) == 0 {
		return nil, "", errors.New("no PostgreSQL nodes in the view (topology: {postgres: 1})")
	}
	for i := len(nodes) - 1; i > 0; i-- {
		c, err := s.conn(ctx, nodes[i])
		if err != nil {
			continue
		}
		var rec bool
		if err := c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec); err != nil {
			s.drop(nodes[i].Name)
			continue
		}
		if !rec {
			return c, nodes[i].Name, nil
		}
	}
	c, err := s.conn(ctx, nodes[0])
	return c, nodes[0].Name, err
}

// Acquire takes the lock on the newest primary's session: one attempt, or
// with acquire: block, waiting until ctx ends. Fenced, it then increments
// the fence counter in the same session and returns it as the fence.
func (s *pgSubject) Acquire(ctx context.Context) (Grant, error) {
	key := s.cfg.Lock.Key
	conn, node, err := s.primary(ctx)
	s.node = node
	if err != nil {
		s.drop(node)
		return Grant{Node: node}, &lockcore.OpError{Op: "acquire", Key: key, Err: err}
	}
	ok := true
	if s.cfg.Lock.Acquire == scenario.AcquireBlock {
		_, err = conn.Exec(ctx, "SELECT pg_advisory_lock($1)", s.lockID())
	} else {
		err = conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", s.lockID()).Scan(&ok)
	}
	if err != nil {
		return Grant{Node: node}, s.failed("acquire", node, err)
	}
	if !ok {
		return Grant{Node: node}, lockcore.ErrNotAcquired
	}
	g := Grant{Token: fmt.Sprintf("%s:%d", node, conn.PgConn().PID()), ValidUntil: time.Now().Add(pgNoExpiry), Node: node}
	if s.cfg.Fenced {
		if err := conn.QueryRow(ctx, "UPDATE lockpick_fence SET n = n + 1 WHERE k = $1 RETURNING n", s.lockID()).Scan(&g.Fence); err != nil {
			return Grant{Node: node}, s.failed("acquire", node, err)
		}
	}
	return g, nil
}

// failed drops a connection whose statement failed and returns the error
// as the history must record it: certain when nothing was sent (pgx says
// it is safe to retry) or the server answered, unknown otherwise.
func (s *pgSubject) failed(op, node string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &lockcore.OpError{Op: op, Key: s.cfg.Lock.Key, Err: err}
	}
	s.drop(node)
	return &lockcore.OpError{Op: op, Key: s.cfg.Lock.Key, Indeterminate: !pgconn.SafeToRetry(err), Err: err}
}

// Release runs pg_advisory_unlock(k) on the session that holds the lock.
// It returns [lockcore.ErrNotHeld] when the session did not hold it, and
// an error when the connection failed (then the server freed the lock
// when it saw the connection die).
func (s *pgSubject) Release(ctx context.Context) (string, error) {
	c := s.conns[s.node]
	if c == nil {
		return s.node, &lockcore.OpError{Op: "release", Key: s.cfg.Lock.Key, Err: errors.New("the holder's connection is gone")}
	}
	var ok bool
	if err := c.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", s.lockID()).Scan(&ok); err != nil {
		return s.node, s.failed("release", s.node, err)
	}
	if !ok {
		return s.node, lockcore.ErrNotHeld
	}
	return s.node, nil
}

// Close closes every connection; a lock still held is freed by the server.
func (s *pgSubject) Close() error {
	for n := range s.conns {
		s.drop(n)
	}
	return nil
}
