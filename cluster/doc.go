// Package cluster starts real Redis topologies on loopback and breaks them on purpose.
//
// Every redis-server and redis-sentinel runs as a real process (the process
// [Backend]) and is reached only through a toxiproxy proxy served in-process,
// so network faults are proxy toxics: a partition disables the proxy, lost
// replies drop the downstream stream, delay adds latency. A replica follows
// its master through a proxy of its own, so the replication link can be cut
// while clients still reach both nodes.
//
// Sentinels know each other and the replicas from their configuration files,
// so a fresh topology can fail over within a second or two of the master's
// death instead of waiting for the two-second hello gossip.
//
// Every process a [Cluster] starts is registered with a process-wide reaper:
// [Cluster.Close] stops them, and [ReapOnSignal] stops them on SIGINT/SIGTERM,
// so neither a failing run nor Ctrl-C leaves redis-server behind.
package cluster
