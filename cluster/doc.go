// Package cluster starts real Redis topologies on loopback, every node behind
// a proxy, for package faults to break on purpose.
//
// Every redis-server and redis-sentinel runs as a real process, started by a
// [Backend]: [ProcessBackend] runs them as children of this process, the
// backend of package dockerbackend as containers. With Topology{Etcd: N}
// the nodes are etcd members instead, run by the backend's [MemberRunner]:
// as children of this process, or as containers (see docs/etcd.md). With
// Topology{Postgres: N} they are PostgreSQL servers (a primary and maybe a
// hot standby), children of this process on the process backend only, run
// as the user nobody when this process is root (see docs/postgres.md). With
// Topology{ZooKeeper: N} they are the members of a ZooKeeper ensemble (JVMs
// of Debian's jars), run by the backend's [MemberRunner] as etcd members
// are: as children of this process, or as containers (see
// docs/zookeeper.md).
//
// # Network
//
// Every node is reached only through a link of package netlink, a toxiproxy
// proxy served in-process, so network faults are proxy toxics: a partition
// black-holes the proxy's streams (or closes it), lost replies drop the
// downstream stream, delay adds latency. A replica follows its master
// through a link of its own ([Node].Repl), so the replication link can be
// cut while clients still reach both nodes; a Redis Cluster node's bus and
// an etcd member's peer traffic pass a netlink filter as well, which can
// partition chosen members ([Cluster.SetBusSides], [Cluster.PartitionEtcd]).
// The runner's own services (the protected resource) go behind a link too,
// with [Cluster.AddProxy], and take the same network faults. No toxiproxy
// HTTP API is opened: everything listens on 127.0.0.1 only.
//
// # Faults
//
// The faults live in package faults, which imports this one: cluster gives
// them the nodes, links, clocks and processes to act on, and the few direct
// commands they share with [Cluster.Restore] ([AdminDo], [MigrateSlot],
// [ClusterFailover], [Cluster.Demote]).
//
// Persistence is chosen per node in the [Topology] ([PersistNone],
// [PersistAOFEverySec], [PersistAOFAlways]); it decides what a killed node
// still has when it comes back.
//
// # Clocks
//
// Redis reads its wall clock with gettimeofday (key expiry, TIME) and its
// monotonic clock with clock_gettime (timers). Debian's libfaketime
// deadlocks inside Debian's jemalloc-linked redis-server, so lockpick
// preloads a shim of its own (clockshim/clockshim.c, built by
// [BuildClockShim] or the Makefile) that reads the real clocks with the raw
// syscall and maps them through parameters in a small shared file, rewritten
// by [Clock] while the node runs. Set [ProcessBackend.ClockShim] to start
// nodes under it: every redis-server, and, on that backend, every
// ZooKeeper member's JVM (HotSpot reads both of its clocks with libc's
// clock_gettime) and PostgreSQL postmaster (its backends inherit the
// mapping); each start checks that the process mapped its clock file.
// [ZooKeeperClock] reads a member's wall clock back, as TIME does a Redis
// node's.
//
// # Cleanup and ports
//
// Every process a [Cluster] starts is registered with a process-wide reaper:
// [Cluster.Close] stops them, [ReapOnSignal] stops them on SIGINT/SIGTERM,
// and each is started with a parent-death signal, so neither a failing run,
// a panic nor a kill -9 of lockpick leaves redis-server behind. Ports are
// reserved with netlink.ReservePort, below the kernel's ephemeral range
// under a file lock shared by all lockpick runs on the host, so two runs
// never collide and a node that stays down for a while finds its port free
// when it restarts.
package cluster
