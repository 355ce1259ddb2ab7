// Package checker reads, writes and checks lockpick histories: the events a
// trial recorded while clients acquired, extended and released Redis locks
// and read and wrote the resource the locks protect. [Check] reports every
// violation of mutual exclusion it can prove, as an [Anomaly] of one of five
// kinds, and a [Verdict] in the style of porcupine: [Ok], [Illegal] or
// [Unknown] (a linearizability search timed out; never a guess).
//
// The package imports only the standard library and porcupine, so a history
// recorded by another tool can be checked with it alone.
//
// # Operations
//
// A history is a sequence of [Event] values. An invoke event opens an
// operation of its process, and the next ok, fail or info event of the same
// process with the same F completes it. An operation whose process invokes
// again, or whose history ends, before it completes is treated as info: its
// outcome is unknown. Completions with no open invoke are ignored, except for
// nemesis events, which may be a lone info event.
//
// # Leases
//
// An acquire completed with ok grants a lease. The lease is certainly held
// from the acquire's ok time until its end: the earliest of the holder's own
// deadline (ValidUntil; an ok extend, or an ok re-acquire with the same token,
// moves it) and the invoke time of the holder's release of the key. A release
// whose outcome is unknown (info) therefore ends the lease at its invoke too.
// Without a ValidUntil the lease lasts until the release invoke, or, if the
// holder never releases, until the holder's last completed operation. An
// acquire completed with info or fail grants no lease.
//
// # Double grant
//
// Two leases on one key held by different processes (and carrying different
// tokens) are a double grant when their certain windows [ok, end] overlap by
// more than zero. The rule is exact for what the history can prove: each
// grant really happened at an unknown instant between its acquire's invoke
// and ok, so the latest possible grant times are the ok times, and the
// shortest possible leases are [ok, end]. If those still overlap, then
// whatever the real grant instants were, one lease was granted while the other
// was valid by its holder's own deadline. A grant whose ok comes after the
// other holder's deadline or release invoke is not reported, even when its
// invoke came earlier: the grant may have happened after the other lease
// ended. The same rule, written as a porcupine model over lease operations,
// cross-checks the direct interval check.
//
// Times in messages are relative to the earliest event of the history, for
// example "+1.204s".
package checker
