// Package lockcore implements the Redis lock algorithms lockpick attacks, as
// a lock library that can be used on its own.
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
//
// Clock reads go through a [Clock], so a scenario can skew one client.
package lockcore
