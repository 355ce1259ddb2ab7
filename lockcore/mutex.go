package lockcore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The single-instance lock: SET key token NX PX ttl, released by a script that
// deletes the key only if it still holds our token. With fencing, a script
// sets the key and increments the fencing counter at once. With WaitReplicas,
// WAIT follows the acquire on the same connection, so that it waits for
// exactly that write to reach the replicas.
const acquireSrc = `
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] == '1' then return redis.call('incr', KEYS[2]) end
  return 1
end
return 0`

var (
	acquireScript = redis.NewScript(acquireSrc)
	releaseScript = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`)
	extendScript = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0`)
)

// pipeliner is the optional ability to send commands back to back on one
// connection, which WAIT needs; go-redis clients have it.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// slotMaster is the optional ability of a Redis Cluster client (go-redis's
// ClusterClient) to return the primary serving a key: WAIT must follow the
// acquire on that primary's connection.
type slotMaster interface {
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
}

// A Mutex is a lock on one key of one Redis server. It is safe for
// concurrent use, but holds at most one lease at a time.
type Mutex struct {
	rdb    redis.Scripter
	setter setNXer   // rdb as a setNXer, or nil
	pipe   pipeliner // rdb as a pipeliner, or nil
	key    string
	keys   []string // key, FenceKey
	opt    Options

	mu    sync.Mutex
	lease *Lease
}

// NewMutex returns a lock on key through rdb. opt may be nil. It panics if
// opt.WaitReplicas is set and rdb cannot pipeline (go-redis clients can).
func NewMutex(rdb redis.Scripter, key string, opt *Options) *Mutex {
	m := &Mutex{rdb: rdb, key: key, opt: opt.withDefaults(key)}
	m.setter, _ = rdb.(setNXer)
	m.pipe, _ = rdb.(pipeliner)
	if m.opt.WaitReplicas > 0 && m.pipe == nil {
		panic("lockcore: Options.WaitReplicas needs a client with Pipeline()")
	}
	m.keys = []string{key, m.opt.FenceKey}
	return m
}

// Key returns the lock's key.
func (m *Mutex) Key() string { return m.key }

// Lease returns the current lease, or nil when the lock is not held.
func (m *Mutex) Lease() *Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// TryLock makes one attempt. It returns [ErrNotAcquired] when the key is
// held, an error matching [ErrNotReplicated] when fewer than WaitReplicas
// replicas acknowledged the lock within WaitTimeout (the key is then
// released), or an *[OpError] when Redis could not be asked.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	token := m.opt.Token()
	sent := m.opt.Clock.Now()
	var n int64
	var err error
	switch {
	case m.opt.WaitReplicas > 0:
		n, err = m.acquireReplicated(ctx, token)
	case m.opt.Fencing:
		n, err = acquireScript.Run(ctx, m.rdb, m.keys, token, m.opt.TTL.Milliseconds(), "1").Int64()
	case m.setter != nil:
		var ok bool
		ok, err = m.setter.SetNX(ctx, m.key, token, m.opt.TTL).Result()
		if ok {
			n = 1
		}
	default:
		n, err = acquireScript.Run(ctx, m.rdb, m.keys, token, m.opt.TTL.Milliseconds(), "0").Int64()
	}
	var nr *notReplicated
	if errors.As(err, &nr) {
		return nil, nr.error
	}
	if err != nil {
		return nil, NewOpError("acquire", m.key, err)
	}
	if n == 0 {
		return nil, ErrNotAcquired
	}
	var fence int64
	if m.opt.Fencing {
		fence = n
	}
	lease := newLease(m.key, token, fence, sent, m.opt.TTL-m.opt.drift())
	m.mu.Lock()
	m.lease = lease
	m.mu.Unlock()
	return lease, nil
}

// acquireReplicated sends the acquire script and WAIT in one pipeline, and
// releases the key if too few replicas acknowledged it. It returns the
// script's reply.
func (m *Mutex) acquireReplicated(ctx context.Context, token string) (int64, error) {
	fencing := "0"
	if m.opt.Fencing {
		fencing = "1"
	}
	on := m.pipe
	if sm, ok := m.rdb.(slotMaster); ok {
		c, err := sm.MasterForKey(ctx, m.key)
		if err != nil {
			return 0, NewOpError("acquire", m.key, err)
		}
		on = c
	}
	pipe := on.Pipeline()
	// EVAL, not EVALSHA: a NOSCRIPT reply could not be retried inside the pipeline.
	acquire := pipe.Eval(ctx, acquireSrc, m.keys, token, m.opt.TTL.Milliseconds(), fencing)
	wait := pipe.Do(ctx, "wait", m.opt.WaitReplicas, m.opt.WaitTimeout.Milliseconds())
	_, _ = pipe.Exec(ctx) // the commands carry their own errors
	n, err := acquire.Int64()
	if err != nil || n == 0 {
		return n, err
	}
	acked, err := wait.Int64()
	if err == nil && acked >= int64(m.opt.WaitReplicas) {
		return n, nil
	}
	if err != nil {
		err = NewOpError("wait", m.key, err)
	} else {
		err = fmt.Errorf("%w: %d of %d replicas acknowledged %q", ErrNotReplicated, acked, m.opt.WaitReplicas, m.key)
	}
	if _, rerr := releaseScript.Run(ctx, m.rdb, m.keys[:1:1], token).Result(); rerr != nil {
		err = errors.Join(err, NewOpError("release", m.key, rerr))
	}
	return 0, &notReplicated{err}
}

// notReplicated carries an acquire that was undone for want of replicas
// through TryLock's error handling unchanged.
type notReplicated struct{ error }

func (e *notReplicated) Unwrap() error { return e.error }

// Lock retries [Mutex.TryLock] every RetryDelay until it succeeds, fails with
// something other than [ErrNotAcquired], or ctx ends.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	return retry(ctx, m.opt.RetryDelay, m.TryLock)
}

// Unlock releases the lock if it still holds our token. It returns
// [ErrReleased] without a lease and [ErrNotHeld] when the key was lost.
func (m *Mutex) Unlock(ctx context.Context) error {
	lease := m.take()
	if lease == nil {
		return ErrReleased
	}
	defer lease.markLost()
	n, err := releaseScript.Run(ctx, m.rdb, m.keys[:1:1], lease.Token).Int64()
	if err != nil {
		return NewOpError("release", m.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Extend resets the key's TTL if it still holds our token and moves the
// lease's validity deadline. It returns [ErrNotHeld] when the key was lost.
func (m *Mutex) Extend(ctx context.Context) error {
	lease := m.Lease()
	if lease == nil {
		return ErrReleased
	}
	sent := m.opt.Clock.Now()
	n, err := extendScript.Run(ctx, m.rdb, m.keys[:1:1], lease.Token, m.opt.TTL.Milliseconds()).Int64()
	if err != nil {
		return NewOpError("extend", m.key, err)
	}
	if n == 0 {
		m.take()
		lease.markLost()
		return ErrNotHeld
	}
	lease.extendTo(sent.Add(m.opt.TTL - m.opt.drift()))
	return nil
}

// Abandon forgets the lease without releasing it, as a crashed client would:
// the key stays until its TTL runs out.
func (m *Mutex) Abandon() { m.take() }

func (m *Mutex) take() *Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.lease
	m.lease = nil
	return l
}
