package lockcore

import (
	"sync"
	"time"
)

// A Lease is one grant of a lock.
type Lease struct {
	// Key is the lock's Redis key.
	Key string
	// Token is the random value that proves ownership on release and extend.
	Token string
	// Fence is the fencing token, when the lock hands them out; 0 otherwise.
	Fence int64
	// Acquired is when the acquire request was sent, on the client's clock.
	Acquired time.Time
	// Nodes lists the nodes that granted the lease, as indexes into the
	// clients given to [NewRedlock], in order; only those that had answered
	// when the lease was returned (every node with
	// [RedlockOptions.WaitAll]). It is nil for single-node locks.
	Nodes []int

	mu         sync.Mutex
	validUntil time.Time
	lost       chan struct{}
	lostOnce   sync.Once
}

func newLease(key, token string, fence int64, sent time.Time, validity time.Duration) *Lease {
	return &Lease{Key: key, Token: token, Fence: fence, Acquired: sent,
		validUntil: sent.Add(validity), lost: make(chan struct{})}
}

// ValidUntil returns the deadline after which the holder must assume it no
// longer holds the lock, on the client's clock.
func (l *Lease) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

func (l *Lease) extendTo(t time.Time) {
	l.mu.Lock()
	l.validUntil = t
	l.mu.Unlock()
}

// Lost returns a channel closed once the holder learns the lease is gone:
// it was released, or a renewal found the key no longer held.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

func (l *Lease) markLost() { l.lostOnce.Do(func() { close(l.lost) }) }
