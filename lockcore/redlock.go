package lockcore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redlock takes the single-instance lock on N independent masters at once
// and holds the lock while a majority grants it. The validity deadline is
// counted from the moment the requests were sent, minus clock drift
// (TTL×DriftFactor + 2ms), and the attempt fails if that deadline passed
// before a majority answered. A failed attempt releases on every node, even
// those that seemed to refuse: a node whose reply was lost may hold the key.
// Redisson's RedissonMultiLock released only the nodes it believed it held
// (issue 1606); [RedlockOptions.ReleaseAcquiredOnly] reproduces that.

// redlockAcquireScript takes the lock on one node when the client cannot
// send SET itself; the reply is 1 when the key was set.
var redlockAcquireScript = redis.NewScript(`
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`)

// setNXer is the optional ability to send SET NX PX without a script, which
// costs the server less. go-redis clients have it.
type setNXer interface {
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
}

var _ setNXer = (*redis.Client)(nil)

// RedlockOptions configures a [Redlock]. Zero fields take their defaults.
type RedlockOptions struct {
	// TTL is the key's time to live on every node. default: 10s.
	TTL time.Duration
	// NodeTimeout bounds every request to one node, so that a dead or slow
	// node costs little of the TTL; keep it far below TTL.
	// default: 1% of TTL, at least 5ms.
	NodeTimeout time.Duration
	// RetryDelay is the mean pause between attempts in [Redlock.Lock]. Each
	// pause is drawn uniformly from [RetryDelay/2, 3×RetryDelay/2), so that
	// contenders fall out of step (see FixedRetryDelay). default: 100ms.
	RetryDelay time.Duration
	// Tries is the most attempts [Redlock.Lock] makes. default: 0, no limit
	// (until its context ends).
	Tries int
	// DriftFactor is the share of TTL subtracted from the validity for clock
	// drift, on top of 2ms. default: 0.01.
	DriftFactor float64
	// ReleaseAcquiredOnly releases only the nodes whose reply said they granted
	// the lock, as Redisson did (issue 1606): a node whose reply was lost keeps
	// the key until its TTL. It implies WaitAll for acquisition.
	ReleaseAcquiredOnly bool
	// WaitAll makes every call wait for every node's reply (or NodeTimeout)
	// instead of returning as soon as a majority has answered.
	WaitAll bool
	// Sequential asks the nodes one after another, in Order, each for at
	// most NodeTimeout, as the Redlock description does, instead of all at
	// once. It stops at a majority unless Greedy.
	Sequential bool
	// Greedy keeps asking the remaining nodes after a majority granted the
	// lock (seed 001, question 2): a later crash of one of them then leaves
	// the other clients short of a majority. Without Sequential it is WaitAll
	// for acquisition.
	Greedy bool
	// GiveUpEarly stops a Sequential attempt as soon as the nodes left
	// cannot make a majority (Redisson's RedissonMultiLock), instead of
	// taking them anyway: three clients can then no longer split three
	// nodes one each, round after round (seed 001, question 6).
	GiveUpEarly bool
	// Order is the order Sequential asks the nodes in, as indexes into the
	// nodes given to [NewRedlock]: each exactly once, or NewRedlock panics.
	// default: 0, 1, ..., N-1.
	Order []int
	// Keys, when set, names the key on each node, one per node given to
	// [NewRedlock] (or it panics): Redlock over the primaries of one Redis
	// Cluster through a cluster client needs a key in each primary's
	// slots. default: the lock's key on every node.
	Keys []string
	// FixedRetryDelay makes [Redlock.Lock] pause exactly RetryDelay between
	// attempts, so contenders that failed together retry together.
	FixedRetryDelay bool
	// IgnoreElapsed is the mistake seed 001 warns against (question 3):
	// the validity is counted from the end of the acquisition instead of
	// from when the requests were sent, so a slow acquisition yields a
	// lease that outlives the keys on the first nodes. For tests only.
	IgnoreElapsed bool
	// Clock is the client's clock. default: [SystemClock].
	Clock Clock
	// Token returns a fresh random token. default: [RandomToken].
	Token func() string
}

func (o *RedlockOptions) withDefaults() RedlockOptions {
	var c RedlockOptions
	if o != nil {
		c = *o
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.NodeTimeout <= 0 {
		c.NodeTimeout = max(c.TTL/100, 5*time.Millisecond)
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = 100 * time.Millisecond
	}
	if c.DriftFactor <= 0 {
		c.DriftFactor = 0.01
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Token == nil {
		c.Token = RandomToken
	}
	return c
}

// A Redlock is the Redlock algorithm over independent Redis masters. It is
// safe for concurrent use, but holds at most one lease at a time.
type Redlock struct {
	nodes   []redis.Scripter
	workers []*nodeWorker
	all     []int
	order   []int // the order of a Sequential attempt
	key     string
	keys    []string // by node
	quorum  int
	opt     RedlockOptions

	mu    sync.Mutex
	lease *Lease
}

// NewRedlock returns a lock on key over nodes, which should be independent
// masters (an odd number, usually 5). opt may be nil. It panics without
// nodes.
//
// Each node's requests go through a goroutine of the Redlock's own, on a
// connection taken from that node's pool (when the client is a go-redis
// client) and given back after 2s without work. Clients should set
// ContextTimeoutEnabled, so that a request past NodeTimeout also frees its
// connection at once; the call itself never waits longer than NodeTimeout
// for a node either way.
func NewRedlock(nodes []redis.Scripter, key string, opt *RedlockOptions) *Redlock {
	if len(nodes) == 0 {
		panic("lockcore: NewRedlock without nodes")
	}
	r := &Redlock{
		nodes:   nodes,
		workers: make([]*nodeWorker, len(nodes)),
		all:     make([]int, len(nodes)),
		key:     key,
		keys:    make([]string, len(nodes)),
		quorum:  len(nodes)/2 + 1,
		opt:     opt.withDefaults(),
	}
	for i, n := range nodes {
		r.workers[i] = newNodeWorker(n)
		r.all[i] = i
		r.keys[i] = key
	}
	if len(r.opt.Keys) > 0 {
		if len(r.opt.Keys) != len(nodes) {
			panic(fmt.Sprintf("lockcore: NewRedlock: %d keys for %d nodes", len(r.opt.Keys), len(nodes)))
		}
		copy(r.keys, r.opt.Keys)
	}
	r.order = r.all
	if len(r.opt.Order) > 0 {
		if !isPermutation(r.opt.Order, len(nodes)) {
			panic(fmt.Sprintf("lockcore: NewRedlock: Order %v is not an order of nodes 0..%d", r.opt.Order, len(nodes)-1))
		}
		r.order = r.opt.Order
	}
	return r
}

// isPermutation reports whether order holds each of 0..n-1 exactly once.
func isPermutation(order []int, n int) bool {
	if len(order) != n {
		return false
	}
	seen := make([]bool, n)
	for _, i := range order {
		if i < 0 || i >= n || seen[i] {
			return false
		}
		seen[i] = true
	}
	return true
}

// Key returns the lock's key.
func (r *Redlock) Key() string { return r.key }

// Quorum returns how many nodes must grant the lock: a majority.
func (r *Redlock) Quorum() int { return r.quorum }

// Lease returns the current lease, or nil when the lock is not held.
func (r *Redlock) Lease() *Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// TryLock makes one attempt: on every node at once, or node by node with
// Sequential. It returns a lease when
// a majority granted it before its validity ran out. Otherwise it releases
// the key (see [RedlockOptions.ReleaseAcquiredOnly]) and returns an error
// matching [ErrNotAcquired]; node failures are joined to it as *[OpError]
// values, and a cancelled ctx as ctx.Err(). The attempt as a whole is then
// determinate: the caller does not hold the lock.
func (r *Redlock) TryLock(ctx context.Context) (*Lease, error) {
	token := r.opt.Token()
	sent := r.opt.Clock.Now()
	n, q := len(r.nodes), r.quorum
	var a attempt
	if r.opt.Sequential {
		a = r.acquireInOrder(ctx, token)
	} else {
		a = r.acquireAtOnce(ctx, token)
	}
	yes, cerr := len(a.granted), a.err
	validity := r.opt.TTL - r.opt.drift()
	if r.opt.IgnoreElapsed {
		sent = r.opt.Clock.Now()
	}
	if cerr == nil && yes >= q && r.opt.Clock.Now().Sub(sent) < validity {
		lease := newLease(r.key, token, 0, sent, validity)
		lease.Nodes = a.granted
		r.mu.Lock()
		r.lease = lease
		r.mu.Unlock()
		return lease, nil
	}

	release := r.all
	if r.opt.ReleaseAcquiredOnly {
		release = a.granted
	}
	rf := startFanout(ctx, r.spec(opRelease, token, release, never, func(ctx context.Context, i int, c redis.Scripter) (bool, error) {
		return r.releaseOn(ctx, i, c, token)
	}))
	if cerr != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAcquired, cerr)
	}
	if _, err := rf.wait(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
	}
	if len(a.errs) > 0 {
		return nil, fmt.Errorf("%w: %d of %d nodes granted: %w", ErrNotAcquired, yes, n, errors.Join(a.errs...))
	}
	if a.gaveUp > 0 {
		return nil, fmt.Errorf("%w: gave up after %d of %d nodes, a majority out of reach", ErrNotAcquired, a.gaveUp, n)
	}
	if yes > 0 {
		// A minority granted it: another client holds the rest, or the
		// contenders split the nodes between them.
		return nil, fmt.Errorf("%w: %d of %d nodes granted", ErrNotAcquired, yes, n)
	}
	return nil, ErrNotAcquired
}

// An attempt is what one acquisition got: the nodes that granted the key,
// the node errors, and ctx's error if it ended first.
type attempt struct {
	granted []int
	errs    []error
	err     error
	gaveUp  int // with GiveUpEarly, the nodes asked before giving up; 0 if it did not
}

// acquireAtOnce asks every node at once and returns when a majority granted
// (every node answered, with Greedy, WaitAll or ReleaseAcquiredOnly) or a
// majority is out of reach.
func (r *Redlock) acquireAtOnce(ctx context.Context, token string) attempt {
	n, q := len(r.nodes), r.quorum
	waitAll := r.opt.WaitAll || r.opt.ReleaseAcquiredOnly || r.opt.Greedy
	f := startFanout(ctx, r.spec(opAcquire, token, r.all, func(t tally) bool {
		return (t.yes >= q && !waitAll) || n-t.no-t.failed < q
	}, func(ctx context.Context, i int, c redis.Scripter) (bool, error) {
		return r.acquireOn(ctx, i, c, token)
	}))
	_, err := f.wait(ctx)
	return attempt{granted: f.granted(), errs: f.errors(), err: err}
}

// acquireInOrder asks the nodes one at a time in Order, each for at most
// NodeTimeout, until a majority granted (every node, with Greedy) or, with
// GiveUpEarly, the nodes left cannot make a majority.
func (r *Redlock) acquireInOrder(ctx context.Context, token string) attempt {
	var a attempt
	for k, i := range r.order {
		if len(a.granted) >= r.quorum && !r.opt.Greedy {
			break
		}
		if r.opt.GiveUpEarly && len(a.granted)+len(r.order)-k < r.quorum {
			a.gaveUp = k
			break
		}
		f := startFanout(ctx, r.spec(opAcquire, token, []int{i}, never, func(ctx context.Context, i int, c redis.Scripter) (bool, error) {
			return r.acquireOn(ctx, i, c, token)
		}))
		_, err := f.wait(ctx)
		a.granted = append(a.granted, f.granted()...)
		a.errs = append(a.errs, f.errors()...)
		if err != nil {
			a.err = err
			break
		}
	}
	return a
}

// Lock retries [Redlock.TryLock] after a random pause (RetryDelay with
// FixedRetryDelay) until it succeeds,
// fails with something other than [ErrNotAcquired], makes Tries attempts,
// or ctx ends. It returns the last attempt's error.
func (r *Redlock) Lock(ctx context.Context) (*Lease, error) {
	var timer *time.Timer
	for try := 1; ; try++ {
		lease, err := r.TryLock(ctx)
		if !errors.Is(err, ErrNotAcquired) || (r.opt.Tries > 0 && try >= r.opt.Tries) {
			return lease, err
		}
		if cerr := ctxErr(ctx); cerr != nil {
			if errors.Is(err, cerr) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, cerr)
		}
		d := r.opt.RetryDelay
		if !r.opt.FixedRetryDelay {
			d = r.opt.RetryDelay/2 + rand.N(r.opt.RetryDelay)
		}
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, ctx.Err())
		case <-timer.C:
		}
	}
}

// Unlock releases the lock on every node (only on the lease's Nodes with
// ReleaseAcquiredOnly) and returns once a majority has confirmed; the other
// releases finish within NodeTimeout. It returns [ErrReleased] without a
// lease, [ErrExpired] if fewer than a majority still held the key after the
// lease's deadline, [ErrNotHeld] if they did not before it, and the node
// errors when too few nodes answered.
func (r *Redlock) Unlock(ctx context.Context) error {
	lease := r.take()
	if lease == nil {
		return ErrReleased
	}
	defer lease.markLost()
	nodes := r.all
	if r.opt.ReleaseAcquiredOnly {
		nodes = lease.Nodes
	}
	f := startFanout(ctx, r.spec(opRelease, lease.Token, nodes, r.enough, func(ctx context.Context, i int, c redis.Scripter) (bool, error) {
		return r.releaseOn(ctx, i, c, lease.Token)
	}))
	t, err := f.wait(ctx)
	switch {
	case t.yes >= r.quorum:
		return nil
	case err != nil:
		return NewOpError("release", r.key, err)
	case !r.opt.Clock.Now().Before(lease.ValidUntil()):
		return ErrExpired
	case t.sent-t.no < r.quorum:
		return ErrNotHeld
	}
	return fmt.Errorf("release %q: %d of %d nodes released: %w", r.key, t.yes, len(r.nodes), errors.Join(f.errors()...))
}

// Extend resets the key's TTL on every node that still holds our token and,
// if a majority did so before the lease's deadline, moves the deadline to
// TTL minus drift after the moment the requests were sent. It returns
// [ErrExpired] (and gives the lease up) when the deadline passed first,
// [ErrNotHeld] (same) when a majority answered that the key is not ours, and
// the node errors, leaving the lease as it was, when too few answered.
func (r *Redlock) Extend(ctx context.Context) error {
	lease := r.Lease()
	if lease == nil {
		return ErrReleased
	}
	sent := r.opt.Clock.Now()
	if !sent.Before(lease.ValidUntil()) {
		r.drop(lease)
		return ErrExpired
	}
	nodes := r.all
	if r.opt.ReleaseAcquiredOnly {
		nodes = lease.Nodes
	}
	f := startFanout(ctx, r.spec(opExtend, lease.Token, nodes, r.enough, func(ctx context.Context, i int, c redis.Scripter) (bool, error) {
		return r.extendOn(ctx, i, c, lease.Token)
	}))
	t, err := f.wait(ctx)
	switch {
	case t.yes >= r.quorum:
		if !r.opt.Clock.Now().Before(lease.ValidUntil()) {
			r.drop(lease)
			return ErrExpired
		}
		lease.extendTo(sent.Add(r.opt.TTL - r.opt.drift()))
		return nil
	case err != nil:
		return NewOpError("extend", r.key, err)
	case t.sent-t.no < r.quorum:
		r.drop(lease)
		return ErrNotHeld
	}
	return fmt.Errorf("extend %q: %d of %d nodes extended: %w", r.key, t.yes, len(r.nodes), errors.Join(f.errors()...))
}

// Abandon forgets the lease without releasing it, as a crashed client would:
// the keys stay until their TTL runs out.
func (r *Redlock) Abandon() { r.take() }

// spec describes the request op to nodes: acquire and extend requests
// whose turn comes after the node timeout are dropped, releases never.
func (r *Redlock) spec(op, token string, nodes []int, enough func(tally) bool, req nodeRequest) fanoutSpec {
	return fanoutSpec{op: op, key: r.key, token: token, workers: r.workers, nodes: nodes,
		timeout: r.opt.NodeTimeout, skipLate: op != opRelease, enough: enough, req: req}
}

// never makes a fanout wait for every node.
func never(tally) bool { return false }

// enough reports whether a release or extend may stop waiting: a majority
// confirmed, or a majority is out of reach.
func (r *Redlock) enough(t tally) bool {
	if r.opt.WaitAll {
		return false
	}
	return t.yes >= r.quorum || t.sent-t.no-t.failed < r.quorum
}

func (r *Redlock) take() *Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.lease
	r.lease = nil
	return l
}

// drop gives up lease if it is still the current one.
func (r *Redlock) drop(lease *Lease) {
	r.mu.Lock()
	if r.lease == lease {
		r.lease = nil
	}
	r.mu.Unlock()
	lease.markLost()
}

func (r *Redlock) acquireOn(ctx context.Context, i int, c redis.Scripter, token string) (bool, error) {
	if s, ok := c.(setNXer); ok {
		return s.SetNX(ctx, r.keys[i], token, r.opt.TTL).Result()
	}
	n, err := redlockAcquireScript.Run(ctx, c, r.keys[i:i+1], token, r.opt.TTL.Milliseconds()).Int64()
	return n == 1, err
}

func (r *Redlock) releaseOn(ctx context.Context, i int, c redis.Scripter, token string) (bool, error) {
	n, err := releaseScript.Run(ctx, c, r.keys[i:i+1], token).Int64()
	return n == 1, err
}

func (r *Redlock) extendOn(ctx context.Context, i int, c redis.Scripter, token string) (bool, error) {
	n, err := extendScript.Run(ctx, c, r.keys[i:i+1], token, r.opt.TTL.Milliseconds()).Int64()
	return n == 1, err
}

func (o RedlockOptions) drift() time.Duration { return drift(o.TTL, o.DriftFactor) }
