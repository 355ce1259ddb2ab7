// Package lockcore implements the Redis lock algorithms lockpick attacks, as
// a lock library that can be used on its own.
//
// The locks, one per file, all satisfy [Locker]:
//   - [Mutex]: the single-instance lock, SET NX PX with a random token and
//     a compare-and-delete release; optional fencing tokens and WAIT for
//     replicas.
//   - [Redlock]: the same lock on N independent masters, held while a
//     majority grants it: at once or node by node, stopping at a majority or
//     greedy, giving up early or not.
//   - [MultiLock]: Redisson's RedissonRedLock (RedissonMultiLock with All),
//     a reentrant lock per node taken in order, releasing only what it got.
//   - [Reentrant]: Redisson's reentrant hash lock, with its watchdog and
//     pub/sub wake-up of waiters.
//   - [SetNXExpire] and [GetSetLock]: the legacy locks still copied from
//     blog posts, kept to show how they break.
//
// Every lock hands out a [Lease]: the key, a random token, an optional
// fencing token, and the validity deadline the client computed on its own
// clock when it was granted. Past that deadline the holder must assume it no
// longer holds the lock, whatever Redis says. [Lease.Lost] is closed as soon
// as the holder learns the lease is gone (release, failed renewal).
//
// The deadline is computed from the moment the acquire was sent, not from the
// moment the reply arrived: the key's TTL starts on the server somewhere in
// between, so counting from the send is the only bound that is never late.
// It is TTL minus a drift allowance of TTL×DriftFactor + 2ms, for clocks
// that run at slightly different rates and for the granularity of Redis
// expiry.
//
// Clock reads go through a [Clock], so a scenario can skew one client.
//
// Failures are told apart with errors.Is and errors.As: [ErrNotAcquired]
// (held elsewhere, or a majority was out of reach), [ErrNotHeld] (our token
// is gone), [ErrExpired] (the deadline passed first), [ErrReleased] (no
// lease), [ErrNotReplicated] (too few replicas acknowledged), ctx.Err() for
// a context that ended, and *[OpError] for a node that could not be asked,
// marked Indeterminate when the command may have run.
package lockcore
