// Package checker reads, writes and checks lockpick histories: the events a
// trial recorded while clients acquired, extended and released Redis locks
// and read and wrote the counter the locks protect. [Check] reports every
// violation it can prove as an [Anomaly] of one of six kinds, with a
// [Verdict] in the style of porcupine: [Ok], [Illegal], or [Unknown] when a
// linearizability search timed out (never a guess).
//
// The package imports only the standard library and porcupine, so a history
// recorded by another tool can be checked with it alone.
//
// Every rule below is conservative: an anomaly is reported only if it
// happened in every execution consistent with the history. An operation
// took effect at an unknown instant between its invoke and its completion,
// and an info completion (or none) means it may or may not have taken effect
// at all. Times in messages are relative to the earliest event, as "+1.204s".
//
// # Operations
//
// An invoke event opens an operation of its process, and the next ok, fail
// or info event of that process with the same F completes it. An operation
// whose process invokes again, or whose history ends, before it completes is
// info. Extends pair on their own: a lock's renewals (a watchdog) run beside
// its holder's other operations, so an extend neither completes nor
// interrupts the holder's open read or write. Completions without an open
// invoke are ignored and counted in [Result].Ignored, except lone nemesis
// events, which are notes of their own.
//
// # Leases
//
// An ok acquire grants a lease. Its holder certainly holds it from the
// acquire's ok until the lease's end: the earliest of the holder's own
// deadline (ValidUntil) and the invoke of the holder's release of the key,
// whatever the release's outcome. An ok extend, or an ok re-acquire by the
// holder under the same lease (a reentrant lock), adds a window from its own
// ok to its ValidUntil. A lease without a ValidUntil lasts until the release
// invoke or, if there is none, until the holder's last completed operation.
// Info and fail acquires grant no lease.
//
// A lease is its process's, never the lock's to name: lockpick numbers each
// process's grants ([Event].Grant), and the acquire, extends, lost
// notification, release, reads and writes of a lease carry its number. With
// numbers, an event belongs to the lease of its process with its number,
// and an ok acquire with the number of the lease its process holds is a
// re-entry. In a history without them, an event belongs to the lease its
// process holds on the key (a write: see Stale write), and an ok acquire or
// a lost notification only if its token is the lease's or either is
// missing. Either way tokens are compared within one process only: two
// processes handed one token hold two leases.
//
// # Double grant
//
// Two leases on one key, held by different processes, are a double grant
// when their windows overlap by more than zero, whatever their tokens.
// Each grant happened at an unknown instant no later than its ok, so the
// windows [ok, end] are the shortest the leases can have been; if even those
// overlap, one lease was granted while the other was valid by its holder's
// own deadline. A grant whose ok comes after the other lease's deadline or
// release invoke is never a double grant, even if it was invoked earlier.
//
// The porcupine lease model checks the same rule as linearizability: each
// window is a grant operation, from the invoke to the ok of the acquire or
// extend that opened it, followed by an end operation at the window's end,
// on a mutex whose state is its holder (a process, whatever its token). Its
// grants can be ordered exactly when no two windows overlap, since each
// window's end is fixed and the latest grant instant is the best one.
// [Check] runs the model on every key where the interval check found
// nothing, as a cross-check.
//
// # Shared token
//
// Two leases of a double grant with the same token, not empty, are also a
// shared token, one anomaly per pair of leases beside their double grant:
// the lock handed one token to two holders at once ("SET lock 1 NX"), so
// a release or an extend by token cannot tell whose lease it acts on, and
// one holder's release can free the other's lock.
//
// # Stale write
//
// An ok write is stale when it was invoked after the writer's lease had
// expired by the writer's own deadline and after another process was
// granted the same lock (its ok came before the write's invoke). The write
// belongs to the lease its grant number names or, without one, to the
// latest lease its process was granted and had not released when invoking
// it (the one with the write's token or fence, if it carries one). A write invoked in time but delayed past the deadline is not
// certainly stale; the counter model reports the update it loses. A write
// that failed with an error containing "fenced" was rejected by the
// resource's fencing token: it is reported as a prevented stale write, in
// [Result].Prevented, and does not affect the verdict.
//
// # Lost update
//
// Each critical section reads the counter and writes the value read plus
// one, so a correct history is a sequence of increments. The counter model
// checks, per resource key, that the ok reads and the ok and info writes are
// linearizable on a counter whose writes are legal only as increments (an
// info write may or may not have taken effect; fail writes did not). Two ok
// writes of the same value are reported directly, one anomaly per value,
// since the counter only grows; otherwise an illegal search is explained by
// the first operation that no valid order reaches.
//
// # Stuck lock
//
// A process may legitimately hold a key from its acquire's invoke until its
// lease's deadline (until its successful release completes, if earlier), and
// an acquire or extend with an unknown outcome may hold it from its invoke
// for [Options].MaxTTL. A stuck lock is a run of two or more failed acquires
// of a key, with no ok acquire between them, invoked while no process could
// hold the key, the last failing more than [Options].StuckAfter after the
// last possible holding ended. Failed acquires hold nothing, even if they
// left a key behind on some node.
//
// # Starvation
//
// A process starves on a key when it never acquired the key, tried for at
// least [Options].StarveAfter (from its first acquire's invoke to its last
// failure's completion), and other processes were granted the key in that
// time. An info acquire may have been granted, so it splits the process's
// failures into runs judged apart: a run after it starves on its own (the
// process was not granted the key after it), and no run spans one. A run
// that ends in an ok acquire does not starve.
//
// A stuck-lock period of a key that no process had been granted before it,
// in which two or more processes failed, is reported as a starvation
// instead (a livelock): nobody had held the key, so the contenders kept
// each other out, as Redlock clients splitting the nodes between them round
// after round do (or the lock did not work), whether or not one of them
// got through later.
//
// # Verdicts and timeouts
//
// [CheckTimeout] gives all porcupine searches one time limit. A search that
// does not finish is named in [Result].TimedOut and makes the verdict
// Unknown unless an anomaly was found anyway. Searches of illegal histories
// are the slow ones, so keys with a proven anomaly are not searched again.
// [CheckVerbose] also writes porcupine's HTML visualization, with the
// nemesis events and the anomalies as annotations.
//
// # Streaming
//
// A [Stream] takes a history one event at a time, in time order or up to
// [Options].Reorder out of it (events of recorders sharing a file), and
// keeps only what later events can still change, so its memory does not
// grow with the history while leases end and operations complete: a lease
// renewed for hours keeps the first and the last ten of its renewals (all
// that an anomaly cites of them), and the counter rule forgets the values
// no write to come can repeat without breaking the rule otherwise. What it
// keeps for good is the anomalies found and a few words per process. Its
// Close gives the result [Check] gives (it runs no search, so never
// Unknown), or says with [ErrNeedHistory] that only the whole history can:
// a lost update to explain, an operation completed before its invoke, or
// MaxTTL not set and learned too late. [CheckFile] streams a file, again
// in a window as wide as the file is out of order if the first was too
// narrow (up to [MaxReorder]), and falls back to [CheckTimeout] on the
// whole history in the other cases; its [Summary] says which.
package checker
