package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/lockcore"
)

// A Subject is the lock under test as one client sees it: lockpick's own
// locks, other libraries' through adapters, or a user's. Each client gets its
// own Subject and calls it from one goroutine.
type Subject interface {
	// Acquire makes one attempt. An error matching [lockcore.ErrNotAcquired]
	// means the lock said no; a *[lockcore.OpError] with Indeterminate set
	// (or a context error) means the attempt may have taken effect.
	Acquire(ctx context.Context) (Grant, error)
	// Release releases the last grant and names the node(s) it talked to.
	Release(ctx context.Context) (node string, err error)
}

// A Grant is what a Subject reports of a successful acquire.
type Grant struct {
	Token string
	// Fence is the fencing token, 0 if the lock has none.
	Fence int64
	// ValidUntil is the deadline the lock gave the holder, on its clock.
	ValidUntil time.Time
	// Node names the node(s) that granted it, e.g. "n1" or "n1,n2,n4".
	Node string
	// Lost is closed when the lock tells its holder the lease is gone (a
	// watchdog that could not renew it in time); nil if it never does.
	Lost <-chan struct{}
}

// A HealthReporter is a Subject that can tell, once its client is done,
// whether it behaved. It is optional.
type HealthReporter interface {
	// Health returns nil if the subject behaved. An error wrapping
	// [ErrSubjectUnusable] means it never worked at all (the trial fails
	// as an infrastructure error); any other error makes the trial
	// inconclusive.
	Health() error
}

// A SubjectConfig is what building one client's Subject takes.
type SubjectConfig struct {
	// Lock is the scenario's lock section.
	Lock Lock
	// Fenced asks for fencing tokens.
	Fenced bool
	// Process is the client's number, from 1.
	Process int
	// OnRenew, if set, records the renewals a lock makes on its own (a
	// watchdog) as extends in the history. It may be called from any
	// goroutine.
	OnRenew func(lockcore.Renewal)

	tgt *target
}

// Master returns a client for the current master (the first node, or the one
// the sentinels name) and its node name. In a Redis Cluster it returns the
// client's ClusterClient and no name: see [SubjectConfig.Served].
func (c SubjectConfig) Master(ctx context.Context) (redis.UniversalClient, string, error) {
	if c.tgt.view.Cluster {
		return c.tgt.clusterClient(), "", nil
	}
	return c.tgt.master(ctx)
}

// Served returns a context under which a Redis Cluster client notes the
// node that answered its commands, and a func naming the last of them
// (node stands in for it outside a cluster, or before any answer).
func (c SubjectConfig) Served(ctx context.Context, node string) (context.Context, func() string) {
	if !c.tgt.view.Cluster {
		return ctx, func() string { return node }
	}
	ctx, addr := withServed(ctx)
	return ctx, func() string {
		if a := addr(); a != "" {
			return c.tgt.nodeNamed(a)
		}
		return node
	}
}

// Masters returns a client per master and the masters' names, in order.
func (c SubjectConfig) Masters() ([]*redis.Client, []string) { return c.tgt.masters() }

// Clock returns the client's clock, skewed as the scenario says.
func (c SubjectConfig) Clock() lockcore.Clock {
	if skew := c.Lock.skew(c.Process); skew != 0 {
		return lockcore.SkewedClock{Base: lockcore.SystemClock{}, Offset: skew}
	}
	return lockcore.SystemClock{}
}

// skew is client p's clock offset.
func (l Lock) skew(p int) time.Duration {
	if p >= 1 && p <= len(l.ClockSkew) {
		return l.ClockSkew[p-1].D()
	}
	return 0
}

var (
	subjectsMu sync.RWMutex
	subjects   = map[string]func(SubjectConfig) Subject{}
)

// RegisterSubject makes a lock kind available to scenarios ("lock: {kind:
// NAME}") and to --subject. Registering a name twice panics.
func RegisterSubject(kind string, mk func(SubjectConfig) Subject) {
	subjectsMu.Lock()
	defer subjectsMu.Unlock()
	if _, dup := subjects[kind]; dup {
		panic("scenarios: subject registered twice: " + kind)
	}
	subjects[kind] = mk
}

func newSubject(c SubjectConfig) Subject {
	subjectsMu.RLock()
	defer subjectsMu.RUnlock()
	return subjects[c.Lock.Kind](c)
}

// lockKinds lists the registered lock kinds.
func lockKinds() string {
	subjectsMu.RLock()
	defer subjectsMu.RUnlock()
	var ks []string
	for k := range subjects {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func knownLock(kind string) bool {
	subjectsMu.RLock()
	defer subjectsMu.RUnlock()
	_, ok := subjects[kind]
	return ok
}

// LockerSubject adapts a [lockcore.Locker] on one node to a Subject. mk
// builds the lock for a node's client; a client keeps one lock per node, so
// a reentrant lock keeps its identity, and each acquire goes to whatever
// node is master at that moment.
func LockerSubject(c SubjectConfig, mk func(redis.UniversalClient) lockcore.Locker) Subject {
	return &perMaster{cfg: c, mk: mk, locks: map[string]lockcore.Locker{}}
}

type perMaster struct {
	cfg   SubjectConfig
	mk    func(redis.UniversalClient) lockcore.Locker
	locks map[string]lockcore.Locker
	cur   lockcore.Locker
	node  string
}

func (s *perMaster) Acquire(ctx context.Context) (Grant, error) {
	rdb, node, err := s.cfg.Master(ctx)
	if err != nil {
		return Grant{}, noMaster(s.cfg.Lock.Key, err)
	}
	l, ok := s.locks[node]
	if !ok {
		l = s.mk(rdb)
		s.locks[node] = l
	}
	s.cur = l
	ctx, served := s.cfg.Served(ctx, node)
	lease, err := attempt(ctx, l, s.cfg.Lock.Acquire == AcquireBlock)
	node = served()
	s.node = node
	if err != nil {
		return Grant{Node: node}, err
	}
	return Grant{Token: lease.Token, Fence: lease.Fence, ValidUntil: lease.ValidUntil(), Node: node, Lost: lease.Lost()}, nil
}

func (s *perMaster) Release(ctx context.Context) (string, error) {
	ctx, served := s.cfg.Served(ctx, s.node)
	err := s.cur.Unlock(ctx)
	return served(), err
}

// The ways a client takes the lock ([Lock.Acquire]).
const (
	AcquireTry   = "try"   // one attempt; the client waits its RetryDelay
	AcquireBlock = "block" // the lock's own Lock, waiting as it does
)

// attempt is l.Lock with block, l.TryLock without.
func attempt(ctx context.Context, l lockcore.Locker, block bool) (*lockcore.Lease, error) {
	if block {
		return l.Lock(ctx)
	}
	return l.TryLock(ctx)
}

// blockingKinds are the locks whose Subject honours acquire: block.
var blockingKinds = []string{"set-nx", "redlock", "reentrant", "setnx-expire", "getset", "multilock"}

// noMaster is the error of an acquire that found no master to send to: it
// surely did not run.
func noMaster(key string, err error) error {
	return &lockcore.OpError{Op: "acquire", Key: key, Err: fmt.Errorf("no master: %w", err)}
}
