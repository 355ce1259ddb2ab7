package scenarios

import "time"

func init() {
	register(Scenario{
		Name:    "single-baseline",
		Expect:  Safe,
		Summary: "SET NX PX on one node, several clients, no faults",
		Explain: "Three clients contend for one lock on a single Redis node with nothing going wrong. " +
			"SET NX PX grants the key to one client at a time and the compare-and-delete release never " +
			"removes another client's key, so every lease ends before the next begins. Any anomaly here is a " +
			"bug in the lock or in lockpick.",
		Topology: Topology{Masters: 1},
		Lock:     Lock{Kind: "set-nx", TTL: 2 * time.Second, RetryDelay: 10 * time.Millisecond},
		Clients:  3,
		Hold:     20 * time.Millisecond,
		Duration: 2 * time.Second,
	})
	register(Scenario{
		Name:    "failover-lock-loss",
		Expect:  Unsafe,
		Summary: "SET NX PX on a master with a replica and 3 sentinels; the master dies before the lock replicates",
		Explain: "Redis replicates asynchronously. Client 1 takes the lock on the master after the replication " +
			"link was cut, so the key never reaches the replica. The master is then killed; the sentinels " +
			"promote the replica, which has never heard of the lock, and the next client that follows the " +
			"sentinels is granted the same lock while client 1's lease is still valid by its own clock: " +
			"two holders at once. Waiting for a replica to acknowledge (WAIT) or fencing tokens are the mitigations.",
		Topology:   Topology{Masters: 1, Replicas: 1, Sentinels: 3, DownAfter: 400 * time.Millisecond},
		Lock:       Lock{Kind: "set-nx", TTL: 8 * time.Second, RetryDelay: 50 * time.Millisecond},
		Clients:    2,
		Hold:       6 * time.Second,
		StartAfter: 50 * time.Millisecond,
		Duration:   4 * time.Second,
		Faults: []Step{
			{At: 0, Fault: "cut-replication", Node: "n2"},
			{At: 300 * time.Millisecond, Jitter: 100 * time.Millisecond, Fault: "kill", Node: "n1"},
		},
	})
}
