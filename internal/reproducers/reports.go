package main

// A report is a lock bug or limit that users reported, and how lockpick
// reproduces it: the runs of docs/reproducers.md's table, or, when it
// cannot, why not.
type report struct {
	ID     string // owner/repo#n, or a title for a report outside GitHub
	URL    string
	Saw    string    // what users saw, in a few words
	Runs   []measure // empty when Reason says why it is not reproduced
	Reason string
}

// A measure is one scenario (or one arm of it) a report is measured with, and
// the version of the lock or server it stands for.
type measure struct {
	Scenario string // a built-in scenario of the reproducers suite, or the name in File
	File     string // a scenario file outside the catalogue (a lock program built first), or ""
	Arm      string // "" for a scenario without arms
	Version  string // "affected: ...", "fixed: ..." or "no fix: ..."
}

// reports is the table of docs/reproducers.md, in its order.
var reports = []report{
	{
		ID: "etcd-io/etcd#11456", URL: "https://github.com/etcd-io/etcd/issues/11456",
		Saw: "etcd 3.4's Lock RPC grants a waiter whose lease expired while it waited: two holders",
		Runs: []measure{
			{Scenario: "etcd-waiter-lease-expiry", Arm: "v3lock", Version: "affected: etcd 3.4.23's server Lock RPC (Debian's, which lockpick runs)"},
			{Scenario: "etcd-waiter-lease-expiry", Arm: "mutex", Version: "fixed: the 3.5+ client's concurrency.Mutex (v3.6.16), which re-reads its key after the wait"},
		},
	},
	{
		ID: "etcd-io/etcd#16221", URL: "https://github.com/etcd-io/etcd/issues/16221",
		Saw: "recipe.RWMutex: a writer whose lease is revoked while it waits still acquires; two writers",
		Runs: []measure{
			{Scenario: "etcd-rwmutex-lease-expiry", Arm: "rwmutex", Version: "affected: the RWMutex recipe of client v3.6.16 (unchanged up to v3.8.0-alpha.0: no fix released)"},
			{Scenario: "etcd-rwmutex-lease-expiry", Arm: "mutex", Version: "fixed form: concurrency.Mutex (v3.6.16), which re-reads its key after the wait"},
		},
	},
	{
		ID: "go-redsync/redsync#186", URL: "https://github.com/go-redsync/redsync/issues/186",
		Saw: "a bare majority loses one node's key (restart without persistence, failover): two holders",
		Runs: []measure{
			{Scenario: "redsync-quorum-loss", Version: "no fix: redsync v4.18.1, the newest release (the issue is open)"},
		},
	},
	{
		ID: "redisson/redisson#2515, PR #2518", URL: "https://github.com/redisson/redisson/issues/2515",
		Saw: "after a renewal fails on a connection error the watchdog renews no more; the lock expires while held",
		Runs: []measure{
			{Scenario: "watchdog-renewal-error", Arm: "stop-renewing", Version: "affected: a watchdog that stops after a failed renewal (lockpick's model of Redisson's)"},
			{Scenario: "watchdog-renewal-error", Arm: "retry", Version: "fixed: a watchdog that renews again at the next tick (lockcore)"},
		},
	},
	{
		ID: "redisson/redisson#3194, PR #3195", URL: "https://github.com/redisson/redisson/issues/3194",
		Saw: "the watchdog no longer renews after the holder's connection is cut and comes back",
		Runs: []measure{
			{Scenario: "watchdog-reconnect", Arm: "redisson", Version: "affected: the watchdog stops after the failed renewal (lockpick's model of Redisson's)"},
			{Scenario: "watchdog-reconnect", Arm: "reset", Version: "fixed: the watchdog renews again on a new connection (lockcore)"},
			{Scenario: "watchdog-reconnect", Arm: "unreachable", Version: "fixed, out of reach longer than the lease: the holder is told before its lease ends"},
		},
	},
	{
		ID: "redisson/redisson#2665", URL: "https://github.com/redisson/redisson/issues/2665",
		Saw: "a JVM frozen longer than lockWatchdogTimeout loses its lock while it believes it holds it",
		Runs: []measure{
			{Scenario: "watchdog-pause", Arm: "unfenced", Version: "affected: every version (design); lockpick's model of Redisson's lock"},
			{Scenario: "watchdog-pause", Arm: "fenced", Version: "mitigation: a fencing token (as RFencedLock)"},
		},
	},
	{
		ID: "redisson/redisson#1606", URL: "https://github.com/redisson/redisson/issues/1606",
		Saw: "RedissonRedLock unlocks only the nodes it acquired, leaving a key whose reply was lost",
		Runs: []measure{
			{Scenario: "reply-loss", Arm: "multilock", Version: "affected: RedissonRedLock as reported (3.7.5); lockpick's model (lockcore.MultiLock)"},
			{Scenario: "reply-loss", Arm: "release-acquired-only", Version: "affected: Redlock releasing only the nodes that said yes"},
			{Scenario: "reply-loss", Arm: "release-all", Version: "fixed: Redlock releasing every node, as its description says"},
		},
	},
	{
		ID: "go-redsync/redsync#72, PR #71", URL: "https://github.com/go-redsync/redsync/issues/72",
		Saw: "Extend ignored the validity time: an extension whose replies came back after the lease ended still said yes",
		Runs: []measure{
			{Scenario: "redsync-extend-validity", File: "examples/reproducers/redsync-extend-validity.yaml", Arm: "affected",
				Version: "affected: redsync v4.3.0 (examples/redsyncextend built with go.v4.3.0.mod)"},
			{Scenario: "redsync-extend-validity", File: "examples/reproducers/redsync-extend-validity.yaml", Arm: "fixed",
				Version: "fixed: redsync v4.4.1 (PR #71 is in v4.4.0, which the Go module proxy does not serve)"},
		},
	},
	{
		ID: "redis/redis#6062, valkey-io/valkey PR #1238", URL: "https://github.com/redis/redis/issues/6062",
		Saw: "SENTINEL FAILOVER loses acknowledged writes: the old master accepts them until it is demoted",
		Reason: "a lock write lands in the window only if it is taken between the replica's promotion and the switch " +
			"of master (about 0.5 s here): a trial of lockpick's sentinel-failover fault with contending clients " +
			"(3 trials, Redis 7.0.15) met no such grant, and lockpick cannot start a client inside the failover " +
			"(the fault's inject returns after the switch). The same lost write after a crash-failover is " +
			"failover-lock-loss",
	},
	{
		ID: "Apache Curator, Tech Note 10", URL: "https://cwiki.apache.org/confluence/display/CURATOR/TN10",
		Saw: "a GC pause longer than the session timeout: both clients believe they hold the lock",
		Runs: []measure{
			{Scenario: "curator-session-pause", File: "examples/reproducers/curator-session-pause.yaml", Arm: "unfenced",
				Version: "affected: Apache Curator 5.4.0's InterProcessMutex (examples/curatorlock) on ZooKeeper 3.8: every version (design)"},
			{Scenario: "curator-session-pause", File: "examples/reproducers/curator-session-pause.yaml", Arm: "fenced",
				Version: "mitigation: the lock znode's czxid as fencing token"},
			{Scenario: "zk-pause-holder", Arm: "unfenced", Version: "affected: every ZooKeeper session lock (design); go-zookeeper's recipe"},
			{Scenario: "zk-pause-holder", Arm: "fenced", Version: "mitigation: the lock znode's czxid as fencing token"},
		},
	},
}
