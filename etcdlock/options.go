package etcdlock

import (
	"fmt"
	"time"
)

// A Mode is how [Lock.Lock] takes the lock.
type Mode string

const (
	// ModeMutex uses the client's concurrency.Mutex (v3.6): after waiting
	// for the earlier holders it reads its own key again and returns
	// [ErrSessionExpired] if the key (its lease) is gone. This is the fix
	// of etcd-io/etcd#11456.
	ModeMutex Mode = "mutex"
	// ModeV3Lock calls the server's Lock RPC (service v3lockpb.Lock), which
	// on Debian's etcd 3.4.23 runs 3.4's concurrency.Mutex inside the
	// server: it does not read its key again after waiting, and so grants
	// the lock to a waiter whose lease expired while it waited
	// (etcd-io/etcd#11456). It is the genuine 3.4 behaviour, not a
	// reproduction.
	ModeV3Lock Mode = "v3lock"
	// ModeRWMutex takes the write lock of the client's RWMutex recipe
	// (go.etcd.io/etcd/client/v3/experimental/recipes, v3.6): like 3.4's
	// Mutex it does not look at its own key after waiting, and so grants
	// the lock to a writer whose lease expired while it waited
	// (etcd-io/etcd#16221; the recipe is unchanged up to v3.8.0-alpha.0). It always
	// waits: TryLock returns [ErrNoTryLock].
	ModeRWMutex Mode = "rwmutex"
)

// Options configure a [Lock]. The zero value is usable.
type Options struct {
	// TTL is the session lease's time to live, rounded up to whole
	// seconds (etcd's unit); etcd raises it to its minimum (1.5 election
	// timeouts, rounded up: 2s with lockpick's timings). default: 2s.
	TTL time.Duration `json:"ttl"`
	// Mode is how the lock is taken. default: ModeMutex.
	Mode Mode `json:"mode"`
	// RequireLeader sends the acquire's requests and watches with
	// clientv3.WithRequireLeader: a member that has lost its leader fails
	// them with "no leader" (requests at once, watches after a few election
	// timeouts), where otherwise they wait until it hears from a quorum.
	RequireLeader bool `json:"require_leader"`

	_ struct{} // disallow positional literals, for extensibility
}

func (o Options) withDefaults() (Options, error) {
	if o.TTL <= 0 {
		o.TTL = 2 * time.Second
	}
	switch o.Mode {
	case "":
		o.Mode = ModeMutex
	case ModeMutex, ModeV3Lock, ModeRWMutex:
	default:
		return o, fmt.Errorf("%w: %q (want %q, %q or %q)", ErrBadMode, o.Mode, ModeMutex, ModeV3Lock, ModeRWMutex)
	}
	return o, nil
}

// ttlSeconds returns the TTL in whole seconds, rounded up.
func (o Options) ttlSeconds() int64 {
	return int64((o.TTL + time.Second - 1) / time.Second)
}
