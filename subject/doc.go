// Package subject holds the locks lockpick puts under test, each behind one
// small interface.
//
// A [Subject] is the lock as one client sees it: Acquire returns a [Grant]
// (token, fence, deadline, the node that granted it) and Release releases
// it. [New] builds the subject a scenario's lock kind names from a [Config];
// the built-in kinds are lockpick's own locks (set-nx, redlock, reentrant,
// setnx-expire, getset, multilock), the redislock and redsync libraries
// through adapters, etcd's locks on etcd members (etcd-mutex, etcd-v3lock,
// through package etcdlock), PostgreSQL's session advisory locks on
// PostgreSQL nodes (pg-advisory, pg-advisory-fenced, through pgx),
// go-zookeeper's lock recipe on a ZooKeeper ensemble (zk-lock,
// zk-lock-fenced), none
// (no lock at all), and external: a lock in another
// program, driven over the worker protocol (docs/worker-protocol.md).
// [Register] adds a kind. A [Target] turns a [View] of the deployment into
// the Redis clients a subject talks through. Optional abilities are
// one-method interfaces found by type assertion: [Warmer], [HealthReporter].
package subject
