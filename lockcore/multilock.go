package lockcore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MultiLockOptions configures a [MultiLock]. Zero fields take their defaults.
type MultiLockOptions struct {
	// LeaseTime is each node's lease, renewed every LeaseTime/3 by the
	// MultiLock's watchdog while it is held. default: 30s.
	LeaseTime time.Duration
	// All makes every node necessary, as RedissonMultiLock does: one
	// refusal fails the attempt. default: false, RedissonRedLock, which
	// tolerates N - (N/2+1) refusals.
	All bool
	// NoWatchdog turns renewal off: the lock then lasts LeaseTime.
	NoWatchdog bool
	// RetryDelay is the pause before [MultiLock.Lock] starts again from the
	// first node after a failed pass. default: 0 (at once; Redisson's
	// lock() instead waits on each node, up to the time left).
	RetryDelay time.Duration
	// ClientID identifies this client on every node (the reentrant hash
	// field is ClientID:1). default: a random token.
	ClientID string
	// Clock is the client's clock. default: [SystemClock].
	Clock Clock
	// OnRenew, if set, is called around each renewal round of the
	// watchdog, as [ReentrantOptions].OnRenew is, with the lease's new
	// deadline. It must not block.
	OnRenew func(Renewal)
}

// A MultiLock is Redisson's RedissonRedLock (and, with All,
// RedissonMultiLock) as seed 001 describes it: a reentrant lock on every
// node, taken node by node in order. A pass asks every node; it tolerates
// N - (N/2+1) refusals (none with All), and a refusal once enough nodes
// granted it ends the pass early. Past the tolerance it releases only the
// nodes it got (Redisson issue 1606) and fails, and Lock starts again from
// the first node. Unlike Redisson it sends no unlock to a node whose reply
// timed out. The lease is valid while enough nodes hold it: its deadline is
// the latest by which that many nodes' leases still run; the watchdog
// renews the nodes at once and gives the lease up (closing Lost()) once it
// ran out without enough renewals. It holds at most one lease at a time and
// is safe for concurrent use.
type MultiLock struct {
	locks []*Reentrant
	key   string
	need  int // nodes that must hold the lock
	opt   MultiLockOptions

	mu        sync.Mutex
	lease     *Lease
	held      []int
	acquiring bool // a TryLock is under way
	stop      chan struct{}
	done      chan struct{}
}

var _ Locker = (*MultiLock)(nil)

// NewMultiLock returns a MultiLock on key over nodes. opt may be nil. It
// panics without nodes.
func NewMultiLock(nodes []Subscriber, key string, opt *MultiLockOptions) *MultiLock {
	if len(nodes) == 0 {
		panic("lockcore: NewMultiLock without nodes")
	}
	var o MultiLockOptions
	if opt != nil {
		o = *opt
	}
	// The per-node locks' defaults (Redisson's 30s lease, a random client
	// id, the system clock) are the multilock's.
	d := (&ReentrantOptions{LeaseTime: o.LeaseTime, ClientID: o.ClientID, Clock: o.Clock}).withDefaults(key)
	o.LeaseTime, o.ClientID, o.Clock = d.LeaseTime, d.ClientID, d.Clock
	m := &MultiLock{key: key, opt: o, need: len(nodes)/2 + 1}
	if o.All {
		m.need = len(nodes)
	}
	for _, n := range nodes {
		m.locks = append(m.locks, NewReentrant(n, key, &ReentrantOptions{
			LeaseTime: o.LeaseTime, NoWatchdog: true, ClientID: o.ClientID, Clock: o.Clock}))
	}
	return m
}

// Key returns the lock's key.
func (m *MultiLock) Key() string { return m.key }

// Lease returns the current lease, or nil when the lock is not held. Its
// Token is the reentrant hash field, the same on every node; its Nodes
// are the nodes that granted it, in order.
func (m *MultiLock) Lease() *Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// TryLock makes one pass over the nodes in order. It returns [ErrNotAcquired]
// (with the number of nodes that granted) when more nodes refused than the
// pass tolerates, after releasing the nodes it got.
func (m *MultiLock) TryLock(ctx context.Context) (*Lease, error) {
	m.mu.Lock()
	if m.lease != nil || m.acquiring {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: already held or being acquired", ErrNotAcquired)
	}
	m.acquiring = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.acquiring = false
		m.mu.Unlock()
	}()
	limit := len(m.locks) - m.need // refusals still allowed
	var held []int
	var errs []error
	for i, l := range m.locks {
		if _, err := l.TryLock(ctx); err == nil {
			held = append(held, i)
			continue
		} else if !errors.Is(err, ErrNotAcquired) {
			errs = append(errs, nodeError(i, err))
		}
		if len(m.locks)-len(held) == len(m.locks)-m.need {
			break // enough nodes granted it: the rest are not asked
		}
		if limit == 0 {
			m.release(ctx, held)
			err := fmt.Errorf("%w: %d of %d nodes granted", ErrNotAcquired, len(held), len(m.locks))
			if len(errs) > 0 {
				err = fmt.Errorf("%w: %w", err, errors.Join(errs...))
			}
			return nil, err
		}
		limit--
	}
	if len(held) < m.need {
		m.release(ctx, held)
		return nil, fmt.Errorf("%w: %d of %d nodes granted", ErrNotAcquired, len(held), len(m.locks))
	}
	first := m.locks[held[0]].Lease()
	lease := newLease(m.key, m.locks[held[0]].Field(), 0, first.Acquired, 0)
	lease.Nodes = held
	lease.extendTo(m.validUntil(held))
	m.mu.Lock()
	m.lease, m.held = lease, held
	if !m.opt.NoWatchdog {
		m.stop, m.done = make(chan struct{}), make(chan struct{})
		go m.watchdog(lease, held, m.stop, m.done)
	}
	m.mu.Unlock()
	return lease, nil
}

// validUntil returns the time until which m.need of the nodes held still
// hold their leases: the need-th latest of their deadlines.
func (m *MultiLock) validUntil(held []int) time.Time {
	var ends []time.Time
	for _, i := range held {
		if l := m.locks[i].Lease(); l != nil {
			ends = append(ends, l.ValidUntil())
		}
	}
	if len(ends) < m.need {
		return time.Time{}
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return b.Compare(a) })
	return ends[m.need-1]
}

// release unlocks the nodes in held, and only those, taking at most
// LeaseTime: a release must be sent even when the caller's ctx has ended,
// so only ctx's values are used.
func (m *MultiLock) release(ctx context.Context, held []int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opt.LeaseTime)
	defer cancel()
	var errs []error
	for _, i := range held {
		if err := m.locks[i].Unlock(ctx); err != nil && !errors.Is(err, ErrReleased) {
			errs = append(errs, nodeError(i, err))
		}
	}
	return errors.Join(errs...)
}

// Lock makes passes until one succeeds, pausing RetryDelay between them,
// or ctx ends.
func (m *MultiLock) Lock(ctx context.Context) (*Lease, error) {
	return retry(ctx, m.opt.RetryDelay, m.TryLock)
}

// Unlock releases the nodes that granted the lease and stops the watchdog.
// It returns [ErrReleased] without a lease.
func (m *MultiLock) Unlock(ctx context.Context) error {
	lease, held, done := m.take()
	if lease == nil {
		return ErrReleased
	}
	if done != nil {
		<-done
	}
	defer lease.markLost()
	return m.release(ctx, held)
}

// Extend renews every node that granted the lease and moves its deadline.
func (m *MultiLock) Extend(ctx context.Context) error {
	lease := m.Lease()
	if lease == nil {
		return ErrReleased
	}
	return m.renew(ctx, lease, lease.Nodes)
}

// renew renews the nodes in held at once, each bounded by ctx, and moves
// the lease's deadline when at least need of them renewed; otherwise it
// returns the nodes' errors and leaves the deadline.
func (m *MultiLock) renew(ctx context.Context, lease *Lease, held []int) error {
	results := make([]error, len(held))
	var wg sync.WaitGroup
	for k, i := range held {
		wg.Go(func() { results[k] = m.locks[i].Extend(ctx) })
	}
	wg.Wait()
	renewed := 0
	var errs []error
	for k, err := range results {
		if err == nil {
			renewed++
		} else {
			errs = append(errs, nodeError(held[k], err))
		}
	}
	if renewed < m.need {
		return fmt.Errorf("extend %q: %d of %d nodes renewed, %d needed: %w", m.key, renewed, len(held), m.need, errors.Join(errs...))
	}
	lease.extendTo(m.validUntil(held))
	return nil
}

// watchdog renews the held nodes every LeaseTime/3 until stop is closed.
func (m *MultiLock) watchdog(lease *Lease, held []int, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(m.opt.LeaseTime / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if m.opt.OnRenew != nil {
			m.opt.OnRenew(Renewal{Token: lease.Token})
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.opt.LeaseTime/3)
		err := m.renew(ctx, lease, held)
		cancel()
		if m.opt.OnRenew != nil {
			r := Renewal{Done: true, Token: lease.Token, Err: err}
			if err == nil {
				r.ValidUntil = lease.ValidUntil()
			}
			m.opt.OnRenew(r)
		}
		if err != nil && !m.opt.Clock.Now().Before(lease.ValidUntil()) {
			m.giveUp(lease, held)
			return
		}
	}
}

// giveUp forgets lease, which ran out without enough renewals, closes its
// Lost() and lets the nodes' keys expire. The watchdog calls it.
func (m *MultiLock) giveUp(lease *Lease, held []int) {
	m.mu.Lock()
	if m.lease == lease {
		m.lease, m.held, m.stop, m.done = nil, nil, nil, nil
	}
	m.mu.Unlock()
	for _, i := range held {
		m.locks[i].Abandon()
	}
	lease.markLost()
}

// Abandon stops the watchdog and forgets the lease, as a crashed client
// would: the keys stay until their leases run out.
func (m *MultiLock) Abandon() {
	_, held, done := m.take()
	if done != nil {
		<-done
	}
	for _, i := range held {
		m.locks[i].Abandon()
	}
}

// take forgets the lease and stops the watchdog, returning what it had.
func (m *MultiLock) take() (*Lease, []int, chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lease, held, done := m.lease, m.held, m.done
	if m.stop != nil {
		close(m.stop)
	}
	m.lease, m.held, m.stop, m.done = nil, nil, nil, nil
	return lease, held, done
}
