package subject

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// go-zookeeper's lock recipe (zk.NewLock) on a ZooKeeper ensemble:
// "zk-lock" creates an ephemeral sequential znode under the lock's folder
// and waits until it is the lowest, in a session of the scenario's TTL
// (the session timeout); the lock ends with the session, which the
// ensemble expires a timeout after it last heard from the client.
// "zk-lock-fenced" presents the lock znode's czxid (the zxid of the
// transaction that created it) as the fencing token: the next holder's
// node is created later, by a later transaction, and has a larger one.
// (Its sequence number would do as well, but the first is 0, which is no
// fence to lockpick.)
func init() {
	tr := scenario.Traits{Shape: scenario.ShapeZooKeeper, Honours: []string{"fenced", "acquire", "ignore_lost"}}
	Register("zk-lock", tr, func(c Config) Subject { return &zkSubject{cfg: c} })
	Register("zk-lock-fenced", tr, func(c Config) Subject { c.Fenced = true; return &zkSubject{cfg: c} })
}

// zkConnectTimeout bounds the first session, at warm-up.
const zkConnectTimeout = 10 * time.Second

// A zkSubject is one client's ZooKeeper lock: one session (a zk.Conn to
// every member's proxy), made again after a failed operation, so a znode
// the client may have left behind goes with its old session.
type zkSubject struct {
	cfg Config

	mu   sync.Mutex // guards conn and lost against the session's event callback
	conn *zk.Conn
	lost chan struct{} // the current grant's Lost; nil when none or closed

	lock *zk.Lock
	node string // the member that served the last acquire
}

var (
	_ Subject = (*zkSubject)(nil)
	_ Warmer  = (*zkSubject)(nil)
)

// dir is the lock's folder: one per scenario key.
func (s *zkSubject) dir() string {
	return "/lockpick/" + strings.ReplaceAll(s.cfg.Lock.Key, "/", "_")
}

// WarmUp opens the session and makes the lock's folder. An error wraps
// [ErrUnusable].
func (s *zkSubject) WarmUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, zkConnectTimeout)
	defer cancel()
	conn, err := s.session(ctx)
	if err != nil {
		return fmt.Errorf("%w: ZooKeeper: %w", ErrUnusable, err)
	}
	for _, p := range []string{"/lockpick", s.dir()} {
		_, err := zkCall(ctx, func() (string, error) { return conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("%w: ZooKeeper: create %s: %w", ErrUnusable, p, err)
		}
	}
	return nil
}

// session returns the client's session, opening one (and waiting until
// the ensemble grants it) if there is none.
func (s *zkSubject) session(ctx context.Context) (*zk.Conn, error) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		return conn, nil
	}
	var addrs []string
	for _, m := range s.cfg.Target.view.ZooKeeper {
		addrs = append(addrs, m.Addr)
	}
	if len(addrs) == 0 {
		return nil, errors.New("no ZooKeeper members in the view (topology: {zookeeper: 3})")
	}
	has := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect(addrs, s.cfg.Lock.TTL.D(), zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false),
		zk.WithEventCallback(func(e zk.Event) {
			if e.Type != zk.EventSession {
				return
			}
			switch e.State {
			case zk.StateHasSession:
				once.Do(func() { close(has) })
			case zk.StateDisconnected, zk.StateExpired:
				s.loseGrant()
			}
		}))
	if err != nil {
		return nil, err
	}
	select {
	case <-has:
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("no session within the deadline: %w", ctx.Err())
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	return conn, nil
}

// loseGrant closes the current grant's Lost: the session is disconnected
// (it may expire) or expired.
func (s *zkSubject) loseGrant() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost != nil {
		close(s.lost)
		s.lost = nil
	}
}

// drop closes the session after a failed operation: the ensemble deletes
// its ephemeral znodes, a lock node left behind among them.
func (s *zkSubject) drop() {
	s.mu.Lock()
	conn := s.conn
	s.conn = nil
	s.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	s.lock = nil
}

// zkCall runs fn, a call of go-zookeeper (which takes no context), and
// returns its result, or ctx's error if ctx ends first; fn then finishes
// on its own (at the latest when its session is closed).
func zkCall[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() { v, err := fn(); ch <- result{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Acquire runs the recipe's Lock (acquire: block; it has no try-lock),
// until it is granted or ctx ends. The grant's deadline is the session
// timeout after the moment the client asked for its lock node's stat
// (which the ensemble answered in the session, so it heard from the
// client then at the earliest); its token is the lock node's name, its
// fence (fenced) the node's czxid, and Lost closes when the
// session is disconnected or expired (unless lock.ignore_lost).
func (s *zkSubject) Acquire(ctx context.Context) (Grant, error) {
	key := s.cfg.Lock.Key
	conn, err := s.session(ctx)
	if err != nil {
		return Grant{}, &lockcore.OpError{Op: "acquire", Key: key, Err: err}
	}
	s.node = s.memberOf(conn.Server())
	lost := make(chan struct{})
	s.mu.Lock()
	s.lost = lost
	s.mu.Unlock()
	l := zk.NewLock(conn, s.dir(), zk.WorldACL(zk.PermAll))
	if _, err := zkCall(ctx, func() (struct{}, error) { return struct{}{}, l.Lock() }); err != nil {
		s.drop()
		if ctx.Err() != nil {
			// The session is closed: a node it had, granted or waiting, is gone.
			return Grant{Node: s.node}, &lockcore.OpError{Op: "acquire", Key: key, Err: fmt.Errorf("gave up waiting, session closed: %w", ctx.Err())}
		}
		return Grant{Node: s.node}, &lockcore.OpError{Op: "acquire", Key: key, Indeterminate: true, Err: err}
	}
	s.lock = l
	asked := time.Now()
	name, czxid, err := s.ownNode(ctx, conn)
	if err != nil {
		s.drop()
		return Grant{Node: s.node}, &lockcore.OpError{Op: "acquire", Key: key, Indeterminate: true, Err: err}
	}
	g := Grant{Token: name, ValidUntil: asked.Add(s.cfg.Lock.TTL.D()), Node: s.node}
	if s.cfg.Fenced {
		g.Fence = czxid
	}
	if !s.cfg.Lock.IgnoreLost {
		g.Lost = lost
	}
	return g, nil
}

// ownNode finds the lock node the recipe just made lowest: the lowest of
// the folder's children, which must belong to this session. It returns
// its name and czxid.
func (s *zkSubject) ownNode(ctx context.Context, conn *zk.Conn) (string, int64, error) {
	children, err := zkCall(ctx, func() ([]string, error) { c, _, err := conn.Children(s.dir()); return c, err })
	if err != nil {
		return "", 0, fmt.Errorf("list %s: %w", s.dir(), err)
	}
	name, seq := "", int64(-1)
	for _, c := range children {
		if n, ok := zkSeq(c); ok && (seq < 0 || n < seq) {
			name, seq = c, n
		}
	}
	if name == "" {
		return "", 0, fmt.Errorf("no lock node under %s after the grant", s.dir())
	}
	st, err := zkCall(ctx, func() (*zk.Stat, error) { _, st, err := conn.Exists(s.dir() + "/" + name); return st, err })
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("stat %s: %w", name, err)
	case st == nil || st.EphemeralOwner != conn.SessionID():
		return "", 0, fmt.Errorf("the lowest lock node %s is not this session's: the grant is gone", name)
	}
	return name, st.Czxid, nil
}

// zkSeq parses a lock node's sequence number, the digits after "lock-".
func zkSeq(name string) (int64, bool) {
	i := strings.LastIndex(name, "lock-")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+len("lock-"):], 10, 64)
	return n, err == nil
}

// memberOf names the member at addr (a proxy's address), or addr.
func (s *zkSubject) memberOf(addr string) string {
	for _, m := range s.cfg.Target.view.ZooKeeper {
		if m.Addr == addr || m.Announced == addr {
			return m.Name
		}
	}
	return addr
}

// Release deletes the lock node. It returns [lockcore.ErrNotHeld] when the
// node is gone (its session expired), and an unknown outcome when the
// session fails before the ensemble answers; then the session is closed,
// so the node goes with it.
func (s *zkSubject) Release(ctx context.Context) (string, error) {
	key := s.cfg.Lock.Key
	if s.lock == nil {
		return s.node, lockcore.ErrReleased
	}
	l := s.lock
	s.lock = nil
	_, err := zkCall(ctx, func() (struct{}, error) { return struct{}{}, l.Unlock() })
	switch {
	case err == nil:
		return s.node, nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
		return s.node, lockcore.ErrNotHeld
	}
	s.drop()
	return s.node, &lockcore.OpError{Op: "release", Key: key, Indeterminate: true, Err: err}
}

// Close closes the session; a lock still held is freed by the ensemble.
func (s *zkSubject) Close() error {
	s.drop()
	return nil
}

// zkQuiet drops go-zookeeper's log lines (reconnects, expired sessions):
// the history records what matters.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}
