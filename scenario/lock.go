package scenario

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The ways a client takes the lock ([Lock.Acquire]).
const (
	AcquireTry   = "try"   // one attempt; the client waits its RetryDelay
	AcquireBlock = "block" // the lock's own Lock, waiting as it does
)

// blockingKinds are the locks whose Subject honours acquire: block.
var blockingKinds = []string{"zk-lock", "zk-lock-fenced", "set-nx", "redlock", "reentrant", "setnx-expire", "getset", "multilock", "etcd-mutex", "etcd-v3lock", "etcd-rwmutex", "pg-advisory", "pg-advisory-fenced"}

// etcdKinds are the locks that live on etcd members, not on Redis nodes.
var etcdKinds = []string{"etcd-mutex", "etcd-v3lock", "etcd-rwmutex"}

// EtcdLock reports whether kind is one of etcd's locks, which need an etcd
// topology.
func EtcdLock(kind string) bool { return slices.Contains(etcdKinds, kind) }

// pgKinds are the locks that live on PostgreSQL nodes.
var pgKinds = []string{"pg-advisory", "pg-advisory-fenced"}

// PostgresLock reports whether kind is one of PostgreSQL's locks, which
// need a PostgreSQL topology.
func PostgresLock(kind string) bool { return slices.Contains(pgKinds, kind) }

// The lock kinds lockpick ships, known to [Scenario.Validate] without
// any registration: a program that only reads scenarios can check them.
// The package of the locks under test registers a Subject for each.
var builtinKinds = []string{"zk-lock", "zk-lock-fenced", "etcd-mutex", "etcd-rwmutex", "etcd-v3lock", "external", "getset", "multilock", "none", "pg-advisory", "pg-advisory-fenced", "redislock", "redlock",
	"redsync", "reentrant", "set-nx", "setnx-expire"}

var (
	lockKindsMu sync.RWMutex
	lockKindSet = map[string]bool{}
)

func init() {
	for _, k := range builtinKinds {
		lockKindSet[k] = true
	}
}

// RegisterLockKind makes a lock kind known to [Scenario.Validate], for a
// lock added beside the built-in ones; registering a kind twice is harmless.
func RegisterLockKind(kind string) {
	lockKindsMu.Lock()
	defer lockKindsMu.Unlock()
	lockKindSet[kind] = true
}

// LockKinds returns the known lock kinds, sorted: the built-in ones and
// those registered with [RegisterLockKind].
func LockKinds() []string {
	lockKindsMu.RLock()
	defer lockKindsMu.RUnlock()
	var ks []string
	for k := range lockKindSet {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// lockKinds lists the known lock kinds, for a message.
func lockKinds() string { return strings.Join(LockKinds(), ", ") }

// knownLock reports whether kind is a known lock kind.
func knownLock(kind string) bool {
	lockKindsMu.RLock()
	defer lockKindsMu.RUnlock()
	return lockKindSet[kind]
}

// Skew is client p's clock offset (p from 1), from ClockSkew; 0 if none.
func (l Lock) Skew(p int) time.Duration {
	if p >= 1 && p <= len(l.ClockSkew) {
		return l.ClockSkew[p-1].D()
	}
	return 0
}
