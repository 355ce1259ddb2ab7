package scenario

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/internal/suggest"
)

// An Expect is what a scenario should show: safe, unsafe, stuck or starves.
type Expect string

// The expectations of the catalogue. A trial that proves nothing is
// [evidence.Inconclusive], which no expectation accepts.
const (
	Safe   Expect = evidence.Safe   // no anomaly in any trial
	Unsafe Expect = evidence.Unsafe // a safety anomaly (double-grant, stale-write, lost-update)
	Stuck  Expect = evidence.Stuck  // a stuck-lock
	// Starves is a starvation: a client never granted while others were,
	// or nobody granted while nobody held the lock (a livelock).
	Starves Expect = evidence.Starves
	// Conclusive is any verdict that proves something: what a run of the
	// user's own lock expects (see [Scenario.WithSubject]).
	Conclusive Expect = evidence.Conclusive
)

// A Scenario is one attack: where the lock lives, who contends for it, and
// which faults hit it when.
type Scenario struct {
	// Name identifies the scenario on the command line, e.g. "failover-lock-loss".
	Name string `json:"name" yaml:"name"`
	// Expect is the verdict the scenario should produce.
	Expect Expect `json:"expect" yaml:"expect"`
	// Summary is one line for `lockpick list`.
	Summary string `json:"summary" yaml:"summary"`
	// Explain says in a paragraph why the fault breaks (or does not break) the lock.
	Explain string `json:"explain" yaml:"explain"`
	// Topology is the deployment: Redis nodes, or etcd members.
	Topology Topology `json:"topology" yaml:"topology"`
	// Lock is the lock algorithm and its settings.
	Lock Lock `json:"lock" yaml:"lock"`
	// Clients is the number of contending clients. default: 2.
	Clients int `json:"clients" yaml:"clients"`
	// Hold is how long a client keeps the lock once granted. default: 100ms.
	Hold Duration `json:"hold" yaml:"hold"`
	// StartAfter delays the clients' first attempt until the faults due by
	// it are in place: the first attempt also waits for every step at or
	// before it (without When) to be injected.
	StartAfter Duration `json:"start_after" yaml:"start_after"`
	// Cycles[p-1], when above 0, is how many times client p takes the lock
	// before it stops; default: no limit.
	Cycles []int `json:"cycles,omitempty" yaml:"cycles"`
	// Stagger delays client p's start by (p-1)×Stagger more, so client 1 is
	// the first holder.
	Stagger Duration `json:"stagger,omitempty" yaml:"stagger"`
	// Duration is how long the clients run. default: 2s.
	Duration Duration `json:"duration" yaml:"duration"`
	// AlignStart starts the trial's clock at a multiple of this on the
	// wall clock, e.g. 1s: on a second boundary, so that faults land at a
	// known point of Redis's once-a-second fsync. default: 0 (at once).
	AlignStart Duration `json:"align_start,omitempty" yaml:"align_start"`
	// Fenced makes the lock hand out fencing tokens and the protected
	// resource reject writes with a token older than one it has seen.
	Fenced bool `json:"fenced,omitempty" yaml:"fenced"`
	// Isolate lists clients (1-based) that run as their own OS processes, so
	// a pause-client fault freezes the whole client.
	Isolate []int `json:"isolate,omitempty" yaml:"isolate"`
	// Tolerate lists anomaly kinds that are reported but do not change the
	// observed verdict, e.g. stuck-lock where unavailability is the price of
	// a mitigation (WAIT refusing every lock while replication is cut).
	Tolerate []string `json:"tolerate,omitempty" yaml:"tolerate"`
	// Require lists what every trial must show for its verdict to count,
	// beyond at least one grant and every fault firing with its effect:
	// proof that the attack met the lock (see [evidence.Requirement]).
	Require []evidence.Requirement `json:"require,omitempty" yaml:"require"`
	// Suites lists the suites the scenario belongs to besides "default",
	// which holds every built-in scenario: "quick" for the fast ones.
	Suites []string `json:"suites,omitempty" yaml:"suites"`
	// Arms are named variants for `lockpick compare`.
	Arms []Arm `json:"arms,omitempty" yaml:"arms"`
	// Faults is the nemesis schedule.
	Faults []Step `json:"faults,omitempty" yaml:"faults"`
	// Explore configures `lockpick explore` on this scenario: its fault
	// vocabulary and schedule sizes. Run ignores it.
	Explore *ExploreSpec `json:"explore,omitempty" yaml:"explore"`
	// Dropped lists the settings of the scenario's own lock that another
	// subject runs without (see [Scenario.WithSubject]), each with whose
	// setting it is: "sequential (a setting of lockpick's redlock)". Not
	// read from a file.
	Dropped []string `json:"dropped,omitempty" yaml:"-"`
	// Early, when set, lets a trial end before Duration once its faults
	// have settled (see [Early]). explore sets it. Not read from a file.
	Early *Early `json:"-" yaml:"-"`
}

// Early lets a trial end Settle after its last fault healed (or its
// moment's window passed), and not before Min, rather than at Duration:
// explore gives a schedule a Duration that allows for every moment coming
// as late as its window, where most come at once.
type Early struct {
	Min, Settle time.Duration
}

// An ExploreSpec says how `lockpick explore` draws random schedules for a
// scenario; see docs/explore.md. Zero fields take explore's defaults.
type ExploreSpec struct {
	// Faults is the vocabulary: the fault kinds schedules draw from.
	// default: every kind that fits the topology.
	Faults []string `json:"faults,omitempty" yaml:"faults"`
	// MaxFaults bounds the faults of one schedule. default: 4.
	MaxFaults int `json:"max_faults,omitempty" yaml:"max_faults"`
	// Hold is the range [min, max] the clients' hold time is drawn from.
	// default: [TTL/20, TTL×3/4].
	Hold []Duration `json:"hold,omitempty" yaml:"hold"`
}

// A Topology is the serializable form of [cluster.Topology].
type Topology struct {
	Masters   int `json:"masters,omitempty" yaml:"masters"`
	Replicas  int `json:"replicas,omitempty" yaml:"replicas"`
	Sentinels int `json:"sentinels,omitempty" yaml:"sentinels"`
	// DownAfter is the sentinels' down-after-milliseconds.
	DownAfter Duration `json:"down_after,omitempty" yaml:"down_after"`
	// Shards, when above 0, makes the nodes one Redis Cluster: primaries
	// n1..n<shards>, each with Replicas replicas (primary i's first replica
	// is n<shards+i>). Clients use go-redis's ClusterClient, following
	// redirects. Masters and Sentinels must then be 0.
	Shards int `json:"shards,omitempty" yaml:"shards"`
	// NodeTimeout is a Redis Cluster's cluster-node-timeout. default: 500ms.
	NodeTimeout Duration `json:"node_timeout,omitempty" yaml:"node_timeout"`
	// Persistence is every node's: none, aof-everysec or aof-always; for
	// etcd members, no-fsync (their disks ignore fsync). default: none
	// (etcd: members fsync as etcd does).
	Persistence string `json:"persistence,omitempty" yaml:"persistence"`
	// BackgroundWrites, when set, writes an unrelated key to every node this
	// often for the whole trial, as other users of a production node would:
	// with aof-everysec, Redis then fsyncs at the first write of each
	// second, not at the lock's own. default: 0 (no other traffic).
	BackgroundWrites Duration `json:"background_writes,omitempty" yaml:"background_writes"`
	// Etcd, when above 0, makes the topology Etcd etcd members e1..eN (3
	// or 5; at most 7) instead of Redis nodes, for the etcd-* locks. Every
	// other field must then be zero. Both backends run them.
	Etcd int `json:"etcd,omitempty" yaml:"etcd"`
	// Postgres, when above 0, makes the topology PostgreSQL nodes instead
	// of Redis nodes, for the pg-* locks: 1 is a primary p1, 2 adds p2, a
	// hot standby streaming from it. Every other field must then be zero.
	// Process backend only (docs/postgres.md).
	Postgres int `json:"postgres,omitempty" yaml:"postgres"`
	// ZooKeeper, when above 0, makes the topology a ZooKeeper ensemble of
	// members z1..zN (1, 3 or 5) instead of Redis nodes, for the zk-*
	// locks. Every other field must then be zero. Process backend only
	// (docs/zookeeper.md).
	ZooKeeper int `json:"zookeeper,omitempty" yaml:"zookeeper"`
}

// Nodes returns the number of Redis nodes, n1..nN: the masters (at least
// one) and the replicas; 0 in an etcd topology.
func (t Topology) Nodes() int {
	if t.Etcd > 0 || t.Postgres > 0 || t.ZooKeeper > 0 {
		return 0
	}
	if t.Shards > 0 {
		return t.Shards * (1 + t.Replicas)
	}
	return max(t.Masters, 1) + t.Replicas
}

// Cluster is the topology as package cluster starts it.
func (t Topology) Cluster() cluster.Topology {
	return cluster.Topology{Masters: t.Masters, Replicas: t.Replicas, Sentinels: t.Sentinels, DownAfter: t.DownAfter.D(),
		Persistence: cluster.Persistence(t.Persistence), Shards: t.Shards, NodeTimeout: t.NodeTimeout.D(), Etcd: t.Etcd, Postgres: t.Postgres,
		ZooKeeper: t.ZooKeeper}
}

// A Lock names the algorithm under test and its settings.
type Lock struct {
	// Kind is the algorithm: "set-nx" (SET NX PX, compare-and-delete
	// release), "redlock" (over every master), "multilock" (Redisson's
	// RedissonRedLock), "reentrant" (Redisson's hash lock with its
	// watchdog), "setnx-expire" and "getset" (the legacy
	// variants); "redsync" and "redislock" (those libraries, adapted);
	// "etcd-mutex", "etcd-v3lock" and "etcd-rwmutex" (etcd's locks, on an
	// etcd topology: see docs/etcd.md); or "external", a program speaking the worker
	// protocol.
	Kind string `json:"kind" yaml:"kind"`
	// Command runs the external subject: the program and its arguments.
	// It is started once per client; see README "Bring your own lock".
	Command []string `json:"command,omitempty" yaml:"command"`
	// Caps are what the external subject's program declares it does
	// ([CapBlock], [CapRenew], [CapFence]); nil declares nothing, and the
	// program is put through every scenario of its shape, as before caps.
	Caps []string `json:"caps,omitempty" yaml:"caps"`
	// Key is the lock's key. default: "lock".
	Key string `json:"key,omitempty" yaml:"key"`
	// TTL is the lease time to live. default: 2s.
	TTL Duration `json:"ttl" yaml:"ttl"`
	// RetryDelay is the pause between failed attempts. default: 50ms.
	RetryDelay Duration `json:"retry_delay,omitempty" yaml:"retry_delay"`
	// WaitReplicas makes set-nx wait for this many replicas (WAIT) after
	// each acquire, failing the acquire when they do not confirm.
	WaitReplicas int `json:"wait_replicas,omitempty" yaml:"wait_replicas"`
	// WaitTimeout bounds that WAIT. default: lockcore's.
	WaitTimeout Duration `json:"wait_timeout,omitempty" yaml:"wait_timeout"`
	// NodeTimeout bounds each Redlock request to one node. default: lockcore's.
	NodeTimeout Duration `json:"node_timeout,omitempty" yaml:"node_timeout"`
	// ReleaseAcquiredOnly makes Redlock release only the nodes it believes
	// granted the lock (Redisson issue 1606) instead of every node.
	ReleaseAcquiredOnly bool `json:"release_acquired_only,omitempty" yaml:"release_acquired_only"`
	// RequireLeader makes etcd-mutex wait with etcd's WithRequireLeader:
	// a member that has lost its leader fails the wait at once instead of
	// holding it until it hears from a quorum again (see docs/etcd.md).
	RequireLeader bool `json:"require_leader,omitempty" yaml:"require_leader"`
	// Acquire is how clients take the lock: "try" (one attempt, then the
	// client's own fixed RetryDelay) or "block" (the lock's own waiting:
	// Redlock's randomised retry, the reentrant lock's pub/sub wake-up).
	// default: "try".
	Acquire string `json:"acquire,omitempty" yaml:"acquire"`
	// Wait bounds each blocking acquire (acquire: block): the client gives
	// up after this long, as Redisson's tryLock(waitTime, ...) and seed
	// 002's timeoutMsecs do. default: 0, wait until the trial ends.
	Wait Duration `json:"wait,omitempty" yaml:"wait"`
	// Sequential, Greedy, GiveUpEarly, FixedRetryDelay, DriftFactor,
	// WaitAll and Tries are Redlock's options (see lockcore.RedlockOptions).
	Sequential      bool    `json:"sequential,omitempty" yaml:"sequential"`
	Greedy          bool    `json:"greedy,omitempty" yaml:"greedy"`
	GiveUpEarly     bool    `json:"give_up_early,omitempty" yaml:"give_up_early"`
	FixedRetryDelay bool    `json:"fixed_retry_delay,omitempty" yaml:"fixed_retry_delay"`
	DriftFactor     float64 `json:"drift_factor,omitempty" yaml:"drift_factor"`
	WaitAll         bool    `json:"wait_all,omitempty" yaml:"wait_all"`
	Tries           int     `json:"tries,omitempty" yaml:"tries"`
	// IgnoreElapsed makes Redlock count its validity from the end of the
	// acquisition, not from when it sent the requests (a mistake).
	IgnoreElapsed bool `json:"ignore_elapsed,omitempty" yaml:"ignore_elapsed"`
	// RotateOrder makes client p ask the masters of a sequential Redlock
	// starting at the p-th (n2, n3, n1 for client 2 of 3), as clients
	// configured with the nodes in different orders do.
	RotateOrder bool `json:"rotate_order,omitempty" yaml:"rotate_order"`
	// NaiveRecovery makes the getset lock take over an expired lock with
	// DEL then SETNX instead of GETSET (seed 002's warning).
	NaiveRecovery bool `json:"naive_recovery,omitempty" yaml:"naive_recovery"`
	// RecoveryPause makes the getset lock wait this long between reading
	// an expired timestamp and taking the lock over (a slow client).
	RecoveryPause Duration `json:"recovery_pause,omitempty" yaml:"recovery_pause"`
	// AllNodes makes the multilock need every node (RedissonMultiLock)
	// instead of a majority (RedissonRedLock).
	AllNodes bool `json:"all_nodes,omitempty" yaml:"all_nodes"`
	// Reenter makes a reentrant holder lock again and unlock again this
	// many times in each critical section, as nested code does.
	Reenter int `json:"reenter,omitempty" yaml:"reenter"`
	// CountEveryAcquire makes the reentrant lock count every acquire that
	// finds its own field, as Redisson's script does (lockcore sets the
	// count to 1 when the holder holds nothing).
	CountEveryAcquire bool `json:"count_every_acquire,omitempty" yaml:"count_every_acquire"`
	// StopRenewingOnError makes the reentrant lock's watchdog stop for good
	// after one failed renewal, as Redisson's does.
	StopRenewingOnError bool `json:"stop_renewing_on_error,omitempty" yaml:"stop_renewing_on_error"`
	// NoWatchdog turns the reentrant lock's lease renewal off.
	NoWatchdog bool `json:"no_watchdog,omitempty" yaml:"no_watchdog"`
	// ClockSkew offsets client p's clock by ClockSkew[p-1].
	ClockSkew []Duration `json:"clock_skew,omitempty" yaml:"clock_skew"`
	// CrashAfterSetNX names an isolated client of setnx-expire whose process
	// dies between SETNX and EXPIRE on its first acquire.
	CrashAfterSetNX int `json:"crash_after_setnx,omitempty" yaml:"crash_after_setnx"`
	// IgnoreLost makes an etcd lock's holder ignore the session's Done()
	// (the grant's Lost): it writes when its hold is over even if etcd
	// ended its lease meanwhile, as Jepsen's lock-set clients did.
	IgnoreLost bool `json:"ignore_lost,omitempty" yaml:"ignore_lost"`
	// PauseAfterSetNX makes setnx-expire wait this long between a SETNX
	// that succeeded and its EXPIRE, so a fault can land between the two.
	PauseAfterSetNX Duration `json:"pause_after_setnx,omitempty" yaml:"pause_after_setnx"`
	// ConstantToken makes set-nx hand every holder the same value, "1"
	// (SET lock 1 NX PX), so its compare-and-delete release cannot tell
	// one holder from another (seed 000: the value must be unique).
	ConstantToken bool `json:"constant_token,omitempty" yaml:"constant_token"`
	// CheckBeforeDel makes the getset lock's release check, on the
	// holder's clock, that its lock has not expired, and skip the DEL if it
	// has (seed 002's advice).
	CheckBeforeDel bool `json:"check_before_del,omitempty" yaml:"check_before_del"`
	// DelPause makes that release wait this long between its check and its
	// DEL (a slow client), so the lock can expire between the two.
	DelPause Duration `json:"del_pause,omitempty" yaml:"del_pause"`
}

// WithDefaults returns s with every zero setting that has a default set
// to it (see the fields' default: lines). Only a zero, which stands for a
// setting left out, takes a default: a negative value stays, for
// [Scenario.Validate] to refuse.
func (s Scenario) WithDefaults() Scenario {
	if s.Clients == 0 {
		s.Clients = 2
	}
	if s.Hold == 0 {
		s.Hold = Duration(100 * time.Millisecond)
	}
	if s.Duration == 0 {
		s.Duration = Duration(2 * time.Second)
	}
	if s.Lock.Kind == "" {
		s.Lock.Kind = "set-nx"
	}
	if s.Lock.Key == "" {
		s.Lock.Key = "lock"
	}
	if s.Lock.TTL == 0 {
		s.Lock.TTL = Duration(2 * time.Second)
	}
	if s.Lock.RetryDelay == 0 {
		s.Lock.RetryDelay = Duration(50 * time.Millisecond)
	}
	return s
}

var catalogue = map[string]Scenario{}

func register(s Scenario) {
	if _, dup := catalogue[s.Name]; dup {
		panic("scenario: duplicate scenario " + s.Name)
	}
	catalogue[s.Name] = s.WithDefaults()
}

// Lookup returns the built-in scenario with the given name, or an error
// wrapping [ErrUnknownScenario].
func Lookup(name string) (Scenario, error) {
	loadBuiltins()
	s, ok := catalogue[name]
	if !ok {
		return Scenario{}, fmt.Errorf("%w: %q%s (see `lockpick list`)", ErrUnknownScenario, name, suggest.Hint(name, Names()))
	}
	return s, nil
}

// Suite returns the built-in scenarios of the named suite, sorted by name:
// "default" is the whole catalogue, and "quick" and "ci" the scenarios that
// list them. It wraps [ErrUnknownScenario] for a suite with no scenario.
func Suite(name string) ([]Scenario, error) {
	var list []Scenario
	for _, s := range All() {
		if name == "default" || slices.Contains(s.Suites, name) {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: no suite %q%s (suites: %s)", ErrUnknownScenario, name,
			suggest.Hint(name, SuiteNames()), strings.Join(SuiteNames(), ", "))
	}
	return list, nil
}

// SuiteNames returns the names of the built-in suites: "default" (the whole
// catalogue) first, then every suite a scenario lists, sorted.
func SuiteNames() []string {
	var names []string
	for _, s := range All() {
		names = append(names, s.Suites...)
	}
	slices.Sort(names)
	names = slices.DeleteFunc(slices.Compact(names), func(n string) bool { return n == "default" })
	return append([]string{"default"}, names...)
}

// Names returns the names of the built-in scenarios, sorted.
func Names() []string {
	var names []string
	for _, s := range All() {
		names = append(names, s.Name)
	}
	return names
}

// All returns the built-in scenarios sorted by name.
func All() []Scenario {
	loadBuiltins()
	all := make([]Scenario, 0, len(catalogue))
	for _, s := range catalogue {
		all = append(all, s)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}
