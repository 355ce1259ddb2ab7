package subject

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
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
	// [ErrUnusable] means it never worked at all (the trial fails
	// as an infrastructure error); any other error makes the trial
	// inconclusive.
	Health() error
}

// A Warmer is a Subject that must be started before the trial's clock
// starts, such as a lock program. It is optional.
type Warmer interface {
	// WarmUp starts the subject and waits until it answers. An error
	// wrapping [ErrUnusable] means it never did (the trial fails as
	// an infrastructure error before its clock starts).
	WarmUp(ctx context.Context) error
}

// A ProgramHost is a Subject whose lock runs in a program of its own, such
// as a lock program. It is optional.
type ProgramHost interface {
	// ProgramGroup returns the process group the program runs in, or 0
	// if it is not running. An isolated client's runner freezes the
	// group with the client (pause-client), so the program's own
	// threads, a lease renewal among them, freeze as the client's do.
	ProgramGroup() int
}

// A Config is what building one client's Subject takes.
type Config struct {
	// Lock is the scenario's lock section.
	Lock scenario.Lock
	// Fenced asks for fencing tokens.
	Fenced bool
	// Process is the client's number, from 1.
	Process int
	// OnRenew, if set, records the renewals a lock makes on its own (a
	// watchdog) as extends in the history. It may be called from any
	// goroutine.
	OnRenew func(lockcore.Renewal)
	// ClockShimDir is where the clock shim is built and kept, for a lock
	// program whose client's clock the scenario skews (see
	// [cluster.BuildClockShim]). default: a directory under os.TempDir().
	ClockShimDir string

	// Target is where the client's connections go (see [NewTarget]).
	Target *Target
}

// Master returns a client for the current master (the first node, or the one
// the sentinels name) and its node name. In a Redis Cluster it returns the
// client's ClusterClient and no name: see [Config.Served].
func (c Config) Master(ctx context.Context) (redis.UniversalClient, string, error) {
	if c.Target.view.Cluster {
		return c.Target.clusterClient(), "", nil
	}
	return c.Target.master(ctx)
}

// Served returns a context under which a Redis Cluster client notes what
// happened to the commands sent under it, and the record (see [Served]);
// node names the node outside a cluster, or before any answer.
func (c Config) Served(ctx context.Context, node string) (context.Context, *Served) {
	sv := &Served{node: node, tgt: c.Target}
	if c.Target.view.Cluster {
		ctx, sv.s = withServed(ctx)
	}
	return ctx, sv
}

// Served is what a Redis Cluster client did for one call of a lock: which
// node answered last, and whether an earlier attempt may have run. go-redis's
// ClusterClient retries a command after a network error, so the error a lock
// sees is only the last attempt's.
type Served struct {
	node string
	tgt  *Target
	s    *served // nil outside a cluster
}

// Node names the node that answered the call's last command.
func (sv *Served) Node() string {
	if sv.s != nil {
		if a, _ := sv.s.get(); a != "" {
			return sv.tgt.nodeNamed(a)
		}
	}
	return sv.node
}

// Outcome returns err, the call's error, as the history must record it: a
// failure the lock reports as certain, after an attempt that may have run
// (a retried acquire whose first try timed out), becomes an *OpError with
// an unknown outcome. A nil err stays nil.
func (sv *Served) Outcome(op, key string, err error) error {
	if err == nil || sv.s == nil || lockcore.MayHaveRun(err) {
		return err
	}
	if _, uncertain := sv.s.get(); uncertain {
		// %v, not %w: an error wrapping a lock's answer counts as certain.
		return &lockcore.OpError{Op: op, Key: key, Indeterminate: true,
			Err: fmt.Errorf("%v (an earlier attempt the cluster client retried may have run)", err)}
	}
	return err
}

// Masters returns a client per master and the masters' names, in order.
func (c Config) Masters() ([]*redis.Client, []string) { return c.Target.masters() }

// Clock returns the client's clock, skewed as the scenario says.
func (c Config) Clock() lockcore.Clock {
	if skew := c.Lock.Skew(c.Process); skew != 0 {
		return lockcore.SkewedClock{Base: lockcore.SystemClock{}, Offset: skew}
	}
	return lockcore.SystemClock{}
}

var (
	subjectsMu sync.RWMutex
	subjects   = map[string]func(Config) Subject{}
)

// Register makes a lock kind available to scenarios ("lock: {kind:
// NAME}") and to --subject, with its traits: the shape of its lock and the
// scenario lock settings it acts on (see [scenario.Traits]), which decide
// the scenarios it fits. Registering a name twice panics.
func Register(kind string, t scenario.Traits, mk func(Config) Subject) {
	subjectsMu.Lock()
	defer subjectsMu.Unlock()
	if _, dup := subjects[kind]; dup {
		panic("subject: subject registered twice: " + kind)
	}
	subjects[kind] = mk
	scenario.RegisterTraits(kind, t)
}

// Registered reports whether a Subject is registered for kind.
func Registered(kind string) bool {
	subjectsMu.RLock()
	defer subjectsMu.RUnlock()
	return subjects[kind] != nil
}

// New builds the Subject of c.Lock.Kind for one client; the kind must be
// registered (see [Register]).
func New(c Config) Subject {
	subjectsMu.RLock()
	defer subjectsMu.RUnlock()
	return subjects[c.Lock.Kind](c)
}

// LockerSubject adapts a [lockcore.Locker] on one node to a Subject. mk
// builds the lock for a node's client; a client keeps one lock per node, so
// a reentrant lock keeps its identity, and each acquire goes to whatever
// node is master at that moment.
func LockerSubject(c Config, mk func(redis.UniversalClient) lockcore.Locker) Subject {
	return &perMaster{cfg: c, mk: mk, locks: map[string]lockcore.Locker{}}
}

type perMaster struct {
	cfg   Config
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
	lease, err := attempt(ctx, l, s.cfg.Lock.Acquire == scenario.AcquireBlock)
	node = served.Node()
	err = served.Outcome("acquire", s.cfg.Lock.Key, err)
	s.node = node
	if err != nil {
		return Grant{Node: node}, err
	}
	return Grant{Token: lease.Token, Fence: lease.Fence, ValidUntil: lease.ValidUntil(), Node: node, Lost: lease.Lost()}, nil
}

func (s *perMaster) Release(ctx context.Context) (string, error) {
	ctx, served := s.cfg.Served(ctx, s.node)
	err := s.cur.Unlock(ctx)
	return served.Node(), served.Outcome("release", s.cfg.Lock.Key, err)
}

// attempt is l.Lock with block, l.TryLock without.
func attempt(ctx context.Context, l lockcore.Locker, block bool) (*lockcore.Lease, error) {
	if block {
		return l.Lock(ctx)
	}
	return l.TryLock(ctx)
}

// noMaster is the error of an acquire that found no master to send to: it
// surely did not run.
func noMaster(key string, err error) error {
	return &lockcore.OpError{Op: "acquire", Key: key, Err: fmt.Errorf("no master: %w", err)}
}

// Outcome maps a lock error to a history type: fail when the operation surely
// did not take effect, info when it may have. lockcore decides which.
func Outcome(err error) checker.Type {
	if lockcore.MayHaveRun(err) {
		return checker.Info
	}
	return checker.Fail
}
