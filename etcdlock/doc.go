// Package etcdlock is etcd's lock as a lockpick client sees it: one
// [Lock] per client on a key prefix, through go.etcd.io/etcd/client/v3.
// Like lockcore it never imports the harness.
//
// Each acquisition opens a session of its own: a lease of [Options.TTL]
// (whole seconds; etcd grants no less than 1.5 election timeouts, 2s with
// lockpick's timings), kept alive by the client until the grant is
// released, abandoned, or the lease is lost. The holder's key is
// "<prefix>/<lease id in hex>", bound to the lease; the oldest key under
// the prefix (lowest create revision) holds the lock, later ones wait for
// every older one to be deleted. A [Grant] carries the key, the fence, the
// answering member, a validity deadline kept from the keep-alive replies
// ([Grant.ValidUntil]), and the session's Done() as [Grant.Lost].
//
// # Fencing
//
// The fence is the holder's key's create revision ([ModeMutex]), which
// strictly grows from one holder to the next since waiters queue in create
// order; a resource that refuses a fence lower than the highest it has
// seen (or a transaction comparing the key's create revision, Jepsen's
// lock-etcd-set) turns a late holder's write into a refusal.
//
// # The two modes, and etcd-io/etcd#11456
//
// Jepsen's etcd 3.4.3 analysis (2020) found that a waiter whose lease
// expired while it waited was still told it held the lock: 3.4's
// concurrency.Mutex.Lock, after the older keys were deleted, returned
// without checking that its own key (and so its lease) still existed.
// Since v3.5 Mutex.Lock reads its key again after the wait and returns
// ErrSessionExpired if it is gone.
//
//   - [ModeMutex] runs the v3.6 client's concurrency.Mutex: the fixed
//     behaviour. TryLock is its TryLock (one attempt, [ErrNotAcquired]
//     if held).
//   - [ModeV3Lock] calls the server's v3lock Lock RPC, which Debian's etcd
//     3.4.23 implements with its own (3.4) concurrency.Mutex on a session
//     of the caller's lease: the unfixed behaviour, genuinely, not a
//     reproduction. The RPC returns only the key and a header, so the
//     fence is the header's revision (see [Grant.Fence]). It always waits:
//     TryLock returns [ErrNoTryLock].
//
// # Outcomes
//
// Refusals ([ErrNotAcquired], [ErrSessionExpired]) match
// [lockcore.ErrNotAcquired] and are certain. Other failures are
// *[lockcore.OpError]s, Indeterminate when the request may have taken the
// lock (a deadline during Lock, a lost connection); after any failure the
// session's lease is revoked, so whatever it may have taken is let go
// within a second, or expires with the TTL if etcd cannot be reached.
// [Lock.Abandon] stops the keep-alives without releasing, as a client that
// crashed or froze.
package etcdlock
