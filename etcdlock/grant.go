package etcdlock

import (
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A Grant is one acquisition of the lock.
type Grant struct {
	// Key is the holder's key under the lock's prefix: "<key>/<lease hex>".
	Key string
	// Lease is the id of the session lease the key is bound to.
	Lease int64
	// Fence is the fencing token. With ModeMutex it is Key's create
	// revision, which grows from one holder to the next; with ModeV3Lock
	// it is the revision of the server's reply (the server's Lock returns
	// no create revision): Key's create revision when the lock was free,
	// the revision the wait ended at otherwise.
	Fence int64
	// Revision is the store revision of the reply that granted the lock.
	Revision int64
	// Member is the id of the etcd member that answered.
	Member uint64
	// Acquired is when the acquire began (before the lease was granted),
	// on the client's clock.
	Acquired time.Time

	v    *validity
	lost <-chan struct{}
}

// ValidUntil returns a deadline before which the lease cannot have
// expired on a leader whose clock runs at the client's rate: the time the
// last renewal etcd confirmed was sent at the earliest, plus the lease's
// TTL. It moves on with every confirmed renewal.
func (g *Grant) ValidUntil() time.Time { return g.v.get() }

// Lost returns a channel closed once the session ends: its lease expired
// or was revoked, keep-alives went unanswered for a TTL, the grant was
// released or abandoned. It is the session's Done().
func (g *Grant) Lost() <-chan struct{} { return g.lost }

// validity is a session lease's deadline, moved on by keep-alive replies.
type validity struct {
	mu    sync.Mutex
	until time.Time
}

func (v *validity) get() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.until
}

// track moves the deadline on with each keep-alive reply until ka closes.
// A renewal is sent after the previous reply (or, the first, after since)
// arrived, so that arrival time plus the TTL in the renewal's reply is a
// deadline the renewal's own server time cannot undercut.
func (v *validity) track(ka <-chan *clientv3.LeaseKeepAliveResponse, since time.Time) {
	prev := since
	for r := range ka {
		now := time.Now()
		v.mu.Lock()
		v.until = prev.Add(time.Duration(r.TTL) * time.Second)
		v.mu.Unlock()
		prev = now
	}
}
