package lockcore

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Options configures a [Mutex]. Zero fields take their defaults.
type Options struct {
	// TTL is the key's time to live, the longest a crashed holder blocks others.
	// default: 10s.
	TTL time.Duration
	// RetryDelay is the pause between attempts in [Mutex.Lock].
	// default: 50ms.
	RetryDelay time.Duration
	// DriftFactor is the share of TTL subtracted from the validity for clock
	// drift, on top of 2ms. default: 0.01.
	DriftFactor float64
	// Fencing hands out a fencing token with every lease: a counter at
	// FenceKey, incremented in the same script that takes the lock.
	Fencing bool
	// FenceKey is the fencing counter's key; on Redis Cluster it must hash
	// to the key's slot. default: "{key}:fence", or key + ":fence" when key
	// has a {hash tag} already, in the key's slot either way.
	FenceKey string
	// WaitReplicas makes every acquire wait, with WAIT on the same
	// connection, until that many replicas have the key; an acquire that
	// too few replicas acknowledge within WaitTimeout is released and fails
	// with [ErrNotReplicated]. default: 0, no waiting.
	WaitReplicas int
	// WaitTimeout bounds the WAIT. default: 100ms.
	WaitTimeout time.Duration
	// Clock is the client's clock. default: [SystemClock].
	Clock Clock
	// Token returns a fresh random token. default: 16 random bytes, hex.
	Token func() string
}

func (o *Options) withDefaults(key string) Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = 50 * time.Millisecond
	}
	if c.DriftFactor <= 0 {
		c.DriftFactor = 0.01
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = 100 * time.Millisecond
	}
	if c.FenceKey == "" {
		c.FenceKey = fenceKey(key)
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Token == nil {
		c.Token = RandomToken
	}
	return c
}

// drift is the validity lost to clock drift for a lease of o.TTL.
func (o Options) drift() time.Duration { return drift(o.TTL, o.DriftFactor) }

// drift is the validity lost to clock drift for a lease of ttl: factor×ttl
// plus 2ms for the granularity of Redis expiry.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + 2*time.Millisecond
}

// RandomToken returns 16 random bytes in hex, unique enough to prove ownership.
func RandomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
