// Package faults breaks the Redis nodes that package cluster starts, one
// fault per file, each named for its effect: [KillFault], [RestartFault]
// (optionally after a delay and with its data wiped), [PowerLossFault],
// [PauseFault] and [ProcessPauseFault] (SIGSTOP of a node or of any process,
// such as a worker), [ProcessKillFault], [ClientPauseFault], the network
// faults on a node's proxied links ([PartitionFault], [DropRepliesFault],
// [LatencyFault], [ResetFault], [CutReplicationFault], [BusPartitionFault]),
// the clock faults ([ClockJumpFault], [ClockRateFault]) and the topology
// changes ([PromoteFault], [SentinelFailoverFault], [ClusterFailoverFault],
// [MigrateSlotFault]).
//
// A [Fault] is Inject plus an idempotent Heal on one [cluster.Node]. Extra
// abilities are one-method interfaces found by type assertion: a
// [Describer] says what it does, a [Verifier] checks right after Inject that
// its effect is really in place ([Verify], [ErrNoEffect]), and a [Placer]
// says before anything runs which nodes and topologies it fits ([Place]).
// Each fault registers a kind name, so a scenario file can say
// {kind: latency, latency: 200ms} and get one from [NewFault]; [Inject] and
// [Heal] apply a fault to a [cluster.Cluster]'s node by name. When to inject
// is the scenario runner's business.
package faults
