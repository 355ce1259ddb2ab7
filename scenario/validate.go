package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/faults"
)

// Validate reports the first problem with s as an error wrapping
// [ErrBadScenario] that names the field at fault.
func (s Scenario) Validate() error {
	for _, check := range []func() error{
		s.validExpect, s.validLockKind, s.validSizes, s.validTopology, s.validRun, s.validAcquire,
		s.validLockOptions, s.validSubject, s.validIsolate, s.validFaults, s.validExplore, s.validRequire,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// bad is the error of a problem in field, a message as fmt.Sprintf makes it.
func bad(field, format string, a ...any) error {
	return &fieldError{path: field, msg: fmt.Sprintf(format, a...)}
}

// validExpect checks the expected verdict.
func (s Scenario) validExpect() error {
	switch s.Expect {
	case Safe, Unsafe, Stuck, Starves, Conclusive:
	default:
		return bad("expect", "must be safe, unsafe, stuck, starves or conclusive, not %q", s.Expect)
	}
	return nil
}

// validLockKind checks that the lock kind is known.
func (s Scenario) validLockKind() error {
	if !knownLock(s.Lock.Kind) {
		return bad("lock.kind", "unknown lock %q (known: %s)", s.Lock.Kind, lockKinds())
	}
	return nil
}

// validSizes checks the sizes and times of the run, the lock and the
// topology that cannot be negative, or 0 where 0 stands for the default
// (only a zero left out takes one, see [Scenario.WithDefaults]).
func (s Scenario) validSizes() error {
	l, t := s.Lock, s.Topology
	for _, d := range []struct {
		field    string
		d        Duration
		positive bool
	}{
		{"duration", s.Duration, true}, {"hold", s.Hold, true}, {"start_after", s.StartAfter, false},
		{"stagger", s.Stagger, false}, {"lock.ttl", l.TTL, true}, {"lock.retry_delay", l.RetryDelay, true},
		{"lock.wait_timeout", l.WaitTimeout, false}, {"lock.node_timeout", l.NodeTimeout, false},
		{"topology.down_after", t.DownAfter, false},
	} {
		switch {
		case d.positive && d.d <= 0:
			return bad(d.field, "must be above 0, not %v", d.d.D())
		case d.d < 0:
			return bad(d.field, "must be 0 or more, not %v", d.d.D())
		}
	}
	if s.Clients < 1 {
		return bad("clients", "must be a positive whole number, not %d", s.Clients)
	}
	for i, c := range s.Cycles {
		if c < 0 {
			return bad(fmt.Sprintf("cycles[%d]", i), "must be 0 (no limit) or more, not %d", c)
		}
	}
	if l.WaitReplicas < 0 {
		return bad("lock.wait_replicas", "must be 0 or more, not %d", l.WaitReplicas)
	}
	return nil
}

// validTopology checks the topology and what it allows of the lock.
func (s Scenario) validTopology() error {
	if err := s.validZooKeeper(); err != nil {
		return err
	}
	if err := s.validEtcd(); err != nil {
		return err
	}
	if err := s.validPostgres(); err != nil {
		return err
	}
	for _, c := range []struct {
		field string
		n     int
	}{{"masters", s.Topology.Masters}, {"replicas", s.Topology.Replicas}, {"sentinels", s.Topology.Sentinels}} {
		if c.n < 0 {
			return bad("topology."+c.field, "must be 0 or more, not %d", c.n)
		}
	}
	if s.Topology.Shards < 0 {
		return bad("topology.shards", "must not be negative")
	}
	if s.Topology.NodeTimeout < 0 {
		return bad("topology.node_timeout", "must not be negative")
	}
	if s.Topology.Shards > 0 && (s.Topology.Masters > 0 || s.Topology.Sentinels > 0) {
		return bad("topology.shards", "a Redis Cluster has no independent masters or sentinels: drop masters and sentinels")
	}
	if s.Topology.Shards > 0 && slices.Contains([]string{"multilock", "redsync"}, s.Lock.Kind) {
		return bad("lock.kind", "%s over one Redis Cluster's primaries needs a key per shard, which lockpick builds only for its own redlock", s.Lock.Kind)
	}
	if s.Topology.Sentinels > 0 && s.Topology.Replicas == 0 {
		return bad("topology.sentinels", "sentinels need at least one replica to promote")
	}
	switch p := s.Topology.Persistence; {
	case p == "no-fsync" && (s.Topology.Etcd > 0 || s.Topology.ZooKeeper > 0):
	case p == "no-fsync":
		return bad("topology.persistence", "no-fsync is for etcd and ZooKeeper members (topology: {etcd: 3} or {zookeeper: 3}); a Redis node takes none, aof-everysec or aof-always")
	case !slices.Contains([]string{"", "none", "aof-everysec", "aof-always"}, p):
		return bad("topology.persistence", "must be none, aof-everysec or aof-always (or, for etcd and ZooKeeper, no-fsync), not %q", p)
	}
	if s.Topology.BackgroundWrites < 0 || (s.Topology.BackgroundWrites > 0 && s.Topology.BackgroundWrites.D() < time.Millisecond) {
		return bad("topology.background_writes", "must be 0 (none) or at least 1ms")
	}
	return nil
}

// etcdMaxMembers is the most etcd members a topology may have, as package
// cluster starts them.
const etcdMaxMembers = 7

// validEtcd checks an etcd topology, and that etcd's locks and etcd
// members go together.
func (s Scenario) validEtcd() error {
	t, kind := s.Topology, s.Lock.Kind
	switch {
	case t.Etcd < 0 || t.Etcd > etcdMaxMembers:
		return bad("topology.etcd", "must be between 0 (no etcd) and %d members, not %d", etcdMaxMembers, t.Etcd)
	case t.Etcd > 0 && (t.Masters > 0 || t.Replicas > 0 || t.Sentinels > 0 || t.Shards > 0 || t.DownAfter != 0 ||
		t.NodeTimeout != 0 || (t.Persistence != "" && t.Persistence != "no-fsync") || t.BackgroundWrites != 0):
		return bad("topology.etcd", "an etcd topology has no Redis nodes: drop masters, replicas, sentinels, shards, down_after, node_timeout, persistence (but no-fsync) and background_writes")
	case EtcdLock(kind) && t.Etcd == 0:
		return bad("lock.kind", "%s runs on etcd members: it needs topology: {etcd: 3}", kind)
	case t.Etcd > 0 && !EtcdLock(kind) && kind != "external" && kind != "none":
		return bad("lock.kind", "%s is a Redis lock; an etcd topology takes %s, external or none", kind, strings.Join(etcdKinds, ", "))
	case kind == "etcd-v3lock" && s.Lock.Acquire != AcquireBlock:
		return bad("lock.acquire", "etcd-v3lock is the server's Lock RPC, which has no try-lock: set acquire: block")
	case kind == "etcd-rwmutex" && s.Lock.Acquire != AcquireBlock:
		return bad("lock.acquire", "etcd-rwmutex is the RWMutex recipe's Lock, which has no try-lock: set acquire: block")
	case EtcdLock(kind) && (s.Lock.TTL.D() < 2*time.Second || s.Lock.TTL.D()%time.Second != 0):
		return bad("lock.ttl", "an etcd lease lives whole seconds, at least 2s with lockpick's member timings, not %v", s.Lock.TTL.D())
	}
	return nil
}

// pgMaxNodes is the most PostgreSQL nodes a topology may have: a primary
// and a standby.
const pgMaxNodes = 2

// validPostgres checks a PostgreSQL topology, and that PostgreSQL's locks
// and PostgreSQL nodes go together. Their locks take no ttl (a session
// lock never expires); one given is ignored.
func (s Scenario) validPostgres() error {
	t, kind := s.Topology, s.Lock.Kind
	switch {
	case t.Postgres < 0 || t.Postgres > pgMaxNodes:
		return bad("topology.postgres", "must be 0 (none), 1 (a primary) or 2 (a primary and a standby), not %d", t.Postgres)
	case t.Postgres > 0 && (t.Masters > 0 || t.Replicas > 0 || t.Sentinels > 0 || t.Shards > 0 || t.DownAfter != 0 ||
		t.NodeTimeout != 0 || t.Persistence != "" || t.BackgroundWrites != 0 || t.Etcd > 0):
		return bad("topology.postgres", "a PostgreSQL topology has no Redis nodes or etcd members: drop masters, replicas, sentinels, shards, down_after, node_timeout, persistence, background_writes and etcd")
	case PostgresLock(kind) && t.Postgres == 0:
		return bad("lock.kind", "%s runs on PostgreSQL nodes: it needs topology: {postgres: 1}", kind)
	case t.Postgres > 0 && !PostgresLock(kind) && kind != "external" && kind != "none":
		return bad("lock.kind", "%s is not a PostgreSQL lock; a PostgreSQL topology takes %s, external or none", kind, strings.Join(pgKinds, ", "))
	}
	return nil
}

// validRun checks the trial-wide settings: align_start, tolerate.
func (s Scenario) validRun() error {
	if s.AlignStart < 0 || s.AlignStart.D() > time.Minute {
		return bad("align_start", "must be between 0 and 1m")
	}
	for i, k := range s.Tolerate {
		if !slices.Contains(checker.Kinds(), checker.Kind(k)) {
			return bad(fmt.Sprintf("tolerate[%d]", i), "unknown anomaly kind %q", k)
		}
	}
	return nil
}

// validAcquire checks how clients take the lock (acquire,
// crash_after_setnx).
func (s Scenario) validAcquire() error {
	if s.Lock.CrashAfterSetNX != 0 && (s.Lock.Kind != "setnx-expire" || !slices.Contains(s.Isolate, s.Lock.CrashAfterSetNX)) {
		return bad("lock.crash_after_setnx", "needs lock kind setnx-expire and an isolated client")
	}
	switch s.Lock.Acquire {
	case "", AcquireTry:
	case AcquireBlock:
		switch {
		case s.Lock.Kind == "external" && !s.Lock.Declares(CapBlock):
			return bad("lock.acquire", "the lock program does not wait for the lock itself: declare it in lock.caps (%s) if it does", CapBlock)
		case s.Lock.Kind != "external" && !slices.Contains(blockingKinds, s.Lock.Kind):
			return bad("lock.acquire", "lock %q cannot block (block works with %s, and a lock program that declares %s)",
				s.Lock.Kind, strings.Join(blockingKinds, ", "), CapBlock)
		}
	default:
		return bad("lock.acquire", "must be try or block, not %q", s.Lock.Acquire)
	}
	switch {
	case s.Lock.Wait.D() < 0:
		return bad("lock.wait", "must not be negative")
	case s.Lock.Wait.D() > 0 && s.Lock.Acquire != AcquireBlock:
		return bad("lock.wait", "bounds a blocking acquire: only with acquire: block")
	}
	return nil
}

// validLockOptions checks that each lock option belongs to the lock kind
// and is in range.
func (s Scenario) validLockOptions() error {
	if (s.Lock.Sequential || s.Lock.Greedy || s.Lock.GiveUpEarly || s.Lock.FixedRetryDelay || s.Lock.DriftFactor != 0 ||
		s.Lock.WaitAll || s.Lock.Tries != 0 || (s.Lock.RotateOrder && s.Lock.Kind != "multilock") || s.Lock.IgnoreElapsed) && s.Lock.Kind != "redlock" {
		return bad("lock", "sequential, greedy, give_up_early, fixed_retry_delay, drift_factor, wait_all, tries and ignore_elapsed are Redlock's options (lock kind redlock), rotate_order Redlock's and the multilock's")
	}
	if (s.Lock.GiveUpEarly || s.Lock.RotateOrder) && !s.Lock.Sequential && s.Lock.Kind != "multilock" {
		return bad("lock.give_up_early", "give_up_early and rotate_order need sequential: true")
	}
	if s.Lock.DriftFactor < 0 || s.Lock.DriftFactor >= 1 {
		return bad("lock.drift_factor", "must be in [0, 1), not %v", s.Lock.DriftFactor)
	}
	if s.Lock.Tries < 0 {
		return bad("lock.tries", "must be 0 (no limit) or more, not %d", s.Lock.Tries)
	}
	if (s.Lock.NaiveRecovery || s.Lock.RecoveryPause != 0) && s.Lock.Kind != "getset" {
		return bad("lock", "naive_recovery and recovery_pause are the getset lock's options")
	}
	if s.Lock.CountEveryAcquire && s.Lock.Kind != "reentrant" {
		return bad("lock.count_every_acquire", "is the reentrant lock's option")
	}
	if s.Lock.Kind == "multilock" && (s.Lock.NodeTimeout != 0 || s.Lock.ReleaseAcquiredOnly) {
		return bad("lock", "the multilock has no node_timeout and always releases only the nodes it got (release_acquired_only)")
	}
	if s.Lock.AllNodes && s.Lock.Kind != "multilock" {
		return bad("lock.all_nodes", "is the multilock's option")
	}
	if s.Lock.Reenter < 0 || (s.Lock.Reenter > 0 && s.Lock.Kind != "reentrant") {
		return bad("lock.reenter", "needs the reentrant lock, and must not be negative")
	}
	if s.Lock.StopRenewingOnError && (s.Lock.Kind != "reentrant" || s.Lock.NoWatchdog || s.Lock.Reenter > 0) {
		return bad("lock.stop_renewing_on_error", "needs the reentrant lock with its watchdog, without reenter (Redisson restarts a stopped renewal on re-entry; lockcore does not model that)")
	}
	if (s.Lock.FixedRetryDelay || s.Lock.Tries != 0) && s.Lock.Acquire != AcquireBlock {
		return bad("lock", "fixed_retry_delay and tries shape the lock's own waiting: they need acquire: block")
	}
	if s.Lock.RecoveryPause < 0 {
		return bad("lock.recovery_pause", "must not be negative")
	}
	if s.Lock.PauseAfterSetNX < 0 {
		return bad("lock.pause_after_setnx", "must not be negative")
	}
	if s.Lock.IgnoreLost && !EtcdLock(s.Lock.Kind) && !ZooKeeperLock(s.Lock.Kind) {
		return bad("lock.ignore_lost", "is an option of etcd's and ZooKeeper's locks (etcd-mutex, etcd-v3lock, etcd-rwmutex, zk-lock, zk-lock-fenced)")
	}
	if s.Lock.PauseAfterSetNX != 0 && s.Lock.Kind != "setnx-expire" {
		return bad("lock.pause_after_setnx", "needs lock kind setnx-expire")
	}
	if s.Lock.ConstantToken && s.Lock.Kind != "set-nx" {
		return bad("lock.constant_token", "is the set-nx lock's option")
	}
	if s.Lock.DelPause < 0 {
		return bad("lock.del_pause", "must not be negative")
	}
	if (s.Lock.CheckBeforeDel || s.Lock.DelPause != 0) && s.Lock.Kind != "getset" {
		return bad("lock", "check_before_del and del_pause are the getset lock's options")
	}
	if s.Lock.DelPause != 0 && !s.Lock.CheckBeforeDel {
		return bad("lock.del_pause", "is the pause between the release's check and its DEL: it needs check_before_del: true")
	}
	return nil
}

// validSubject checks fencing, etcd's require_leader and the external
// subject's command.
func (s Scenario) validSubject() error {
	if s.Lock.RequireLeader && s.Lock.Kind != "etcd-mutex" {
		return bad("lock.require_leader", "only etcd-mutex waits through etcd's WithRequireLeader")
	}
	if s.Fenced && !slices.Contains([]string{"set-nx", "reentrant", "etcd-mutex", "pg-advisory", "pg-advisory-fenced", "zk-lock", "zk-lock-fenced", "external"}, s.Lock.Kind) {
		return bad("fenced", "only the set-nx, reentrant, etcd-mutex, pg-advisory and zk-lock locks and external subjects hand out fencing tokens")
	}
	if (s.Lock.Kind == "external") != (len(s.Lock.Command) > 0) {
		return bad("lock.command", "the external subject, and only it, needs the command that runs it")
	}
	return s.validCaps()
}

// validCaps checks what the lock program declares it does, and that a
// fenced scenario's program fences.
func (s Scenario) validCaps() error {
	l := s.Lock
	if l.Caps != nil && l.Kind != "external" {
		return bad("lock.caps", "only a lock program (kind external) declares what it does, not %s", l.Kind)
	}
	if i, msg := badCap(l.Caps); msg != "" {
		return bad(fmt.Sprintf("lock.caps[%d]", i), "%q: %s", l.Caps[i], msg)
	}
	if s.Fenced && l.Kind == "external" && l.Caps != nil && !l.Declares(CapFence) {
		return bad("fenced", "the lock program hands out no fencing token: it does not declare %s in lock.caps", CapFence)
	}
	return nil
}

// validIsolate checks the isolated clients.
func (s Scenario) validIsolate() error {
	for i, c := range s.Isolate {
		if c < 1 || c > s.Clients {
			return bad(fmt.Sprintf("isolate[%d]", i), "no client %d; clients are 1..%d", c, s.Clients)
		}
	}
	return nil
}

// validFaults checks each step of the fault schedule.
func (s Scenario) validFaults() error {
	for i, st := range s.Faults {
		if err := s.validStep(fmt.Sprintf("faults[%d]", i), st); err != nil {
			return err
		}
	}
	return nil
}

// validStep checks step st, at field in the file: its fault, its target,
// its times and its moment.
func (s Scenario) validStep(field string, st Step) error {
	nodes := s.Topology.Nodes()
	if f, msg := st.validate(); msg != "" {
		return bad(joinField(field, f), "%s", msg)
	}
	for _, t := range []struct {
		name string
		d    Duration
	}{{"at", st.At}, {"jitter", st.Jitter}, {"for", st.For}, {"within", st.Within}} {
		if t.d < 0 {
			return bad(field+"."+t.name, "must be 0 or more, not %v", t.d.D())
		}
	}
	switch {
	case ClientFault(st.Fault) && st.Aimed() && st.Client != 0:
		return bad(field+".client", "%s aims at %s, the client holding the lock: drop client", st.Fault, st.Node)
	case ClientFault(st.Fault) && !st.Aimed() && st.Node != "":
		return bad(field+".node", "%s acts on the isolated client named by client, or on %s: drop node %q", st.Fault, AimHolder, st.Node)
	case !ClientFault(st.Fault) && st.Client != 0:
		return bad(field+".client", "only pause-client and kill-client act on a client; %s acts on its node", st.Fault)
	}
	if st.Aimed() {
		if msg := s.validAim(st); msg != "" {
			return bad(field+".node", "%s", msg)
		}
	} else if ClientFault(st.Fault) {
		if !slices.Contains(s.Isolate, st.Client) {
			return bad(field+".client", "client %d is not in isolate %v; only isolated clients can be paused or killed", st.Client, s.Isolate)
		}
	} else if s.Topology.Etcd > 0 && !s.validEtcdNode(st.Node) {
		return bad(field+".node", "no node %q; the topology has etcd members e1..e%d, the resource paths r1..r%d and each client's own link to a member, e<i>-c<p>", st.Node, s.Topology.Etcd, s.Clients)
	} else if s.Topology.Postgres > 0 && !s.validPostgresNode(st.Node) {
		return bad(field+".node", "no node %q; the topology has PostgreSQL nodes p1..p%d, the resource paths r1..r%d and each client's own link to a node, p<i>-c<p>", st.Node, s.Topology.Postgres, s.Clients)
	} else if s.Topology.ZooKeeper > 0 && !s.validZooKeeperNode(st.Node) {
		return bad(field+".node", "no node %q; the topology has ZooKeeper members z1..z%d, the resource paths r1..r%d and each client's own link to a member, z<i>-c<p>", st.Node, s.Topology.ZooKeeper, s.Clients)
	} else if s.Topology.Etcd == 0 && s.Topology.Postgres == 0 && s.Topology.ZooKeeper == 0 && !validNode(st.Node, nodes, s.Clients) {
		return bad(field+".node", "no node %q; the topology has n1..n%d, the resource paths r1..r%d and each client's own link to a node, n<i>-c<p>", st.Node, nodes, s.Clients)
	}
	if _, _, link := ClientLinkOf(st.Node); link && !slices.Contains(linkFaults, st.Fault) {
		return bad(field+".node", "%s is a client's link to a node: only %s act on it, not %s", st.Node, strings.Join(linkFaults, ", "), st.Fault)
	}
	if err := s.place(st); err != nil {
		return bad(field+".fault", "%s %v", st.Fault, err)
	}
	if f, msg := s.validWhen(st); msg != "" {
		return bad(joinField(field, f), "%s", msg)
	}
	if due := st.At + st.Jitter; due >= s.Duration {
		return bad(field+".at", "due at %v (at %v + jitter %v) but the trial lasts %v: it would never fire", due.D(), st.At.D(), st.Jitter.D(), s.Duration.D())
	}
	return nil
}

// validExplore checks the explore section, if any.
func (s Scenario) validExplore() error {
	e := s.Explore
	if e == nil {
		return nil
	}
	kinds := slices.DeleteFunc(FaultKinds(), func(k string) bool { return k == "kill-client" })
	for i, k := range e.Faults {
		if !slices.Contains(kinds, k) {
			return bad(fmt.Sprintf("explore.faults[%d]", i), "unknown fault %q (known: %s)", k, strings.Join(kinds, ", "))
		}
	}
	if e.MaxFaults < 0 {
		return bad("explore.max_faults", "must not be negative")
	}
	if len(e.Hold) != 0 && (len(e.Hold) != 2 || e.Hold[0] <= 0 || e.Hold[1] < e.Hold[0]) {
		return bad("explore.hold", "must be [min, max] with 0 < min <= max, e.g. [100ms, 1s]")
	}
	return nil
}

// validRequire checks each requirement, and that the fault it names is in
// the schedule.
func (s Scenario) validRequire() error {
	for i, r := range s.Require {
		if f, msg := r.Validate(); msg != "" {
			return bad(joinField(fmt.Sprintf("require[%d]", i), f), "%s", msg)
		}
		if f, err := s.knownFault(r); err != "" {
			return bad(joinField(fmt.Sprintf("require[%d]", i), f), "%s", err)
		}
	}
	return nil
}

// slowInjects are the faults whose inject returns only once a node or a
// failover is back (restart, power-loss) or done (see SlowInject).
var slowInjects = []string{"restart", "power-loss", "sentinel-failover", "cluster-failover", "migrate-slot", "promote"}

// SlowInject reports whether fault's inject takes seconds, returning only
// once a node or a failover is back or done: at its moment (when:) it
// fires without holding the client that brought the moment, which goes on
// while the fault takes effect.
func SlowInject(fault string) bool { return slices.Contains(slowInjects, fault) }

// validWhen checks a step's moment (when, within): the field and a
// message for the first problem, or "", "".
func (s Scenario) validWhen(st Step) (field, msg string) {
	switch {
	case st.When == nil && st.Within != 0:
		return "within", "only goes with when"
	case st.When == nil:
		return "", ""
	}
	if f, msg := st.When.validate(s.Clients); msg != "" {
		return joinField("when", f), msg
	}
	if st.When.Event == MomentAcquire && slices.Contains(s.Isolate, st.When.Client) {
		return "when.event", fmt.Sprintf("client %d is isolated: its acquire leaves its process before lockpick sees it, so no fault can meet that acquire; wait for granted, read or released", st.When.Client)
	}
	return "", ""
}

func joinField(path, field string) string {
	if field == "" {
		return path
	}
	return path + "." + field
}

// knownFault checks that a requirement naming a fault ("after: kill n4",
// "fault: restart, node: n3") names one of the schedule (see [matchesStep]),
// and that the key states it asks for are recorded for that fault. It
// returns the field at fault and why, or "", "".
func (s Scenario) knownFault(r evidence.Requirement) (field, msg string) {
	what := r.After
	if r.Fault != "" {
		what = strings.TrimSpace(r.Fault + " " + r.Node)
	}
	if what == "" {
		return "", ""
	}
	kind, target, _ := strings.Cut(what, " ")
	for _, st := range s.Faults {
		if st.Fault != kind || !s.matchesStep(target, st) {
			continue
		}
		if r.Fault == "" {
			return "", ""
		}
		if s.Topology.Postgres > 0 && r.KeyAfter != "" {
			return "key_after", "is read from a Redis node; a PostgreSQL advisory lock is not read (key_before on a node says whether a client held the lock, by the history)"
		}
		if (s.Topology.Etcd > 0 || s.Topology.ZooKeeper > 0) && r.KeyAfter != "" {
			return "key_after", "is read from a Redis node; an etcd or ZooKeeper member's key is not read (key_before on a member says whether a client held the lock, by the history)"
		}
		return keysRecorded(r, st)
	}
	return "", fmt.Sprintf("no fault %q in the schedule", what)
}

// matchesStep reports whether a requirement's target (after "kill n2", or a
// fault's node) names step st: "" names any step of the kind, and a target
// names a step with that target as written ("@master" names the step aimed
// at @master, whatever node it resolves to). A concrete target also names an
// aimed step that can resolve to it: "kill n2" names "kill @master" when n2
// can be master; the trial counts that step only if it did land on n2.
func (s Scenario) matchesStep(target string, st Step) bool {
	switch {
	case target == "" || target == st.Target():
		return true
	case !st.Aimed() || strings.HasPrefix(target, "@"):
		return false
	case st.Node == AimHolder:
		p, ok := ClientOf(target)
		return ok && slices.Contains(s.Isolate, p)
	case st.Node == AimHolderResource:
		return validNode(target, 0, s.Clients) && strings.HasPrefix(target, "r")
	}
	known := validNode(target, s.Topology.Nodes(), 0) || s.Topology.Cluster().EtcdIndex(target) > 0 ||
		s.Topology.Cluster().PostgresIndex(target) > 0 || s.Topology.Cluster().ZooKeeperIndex(target) > 0
	return known && faults.Place(mustFault(st), s.Topology.Cluster(), target) == nil
}

// mustFault builds a validated node step's fault.
func mustFault(st Step) faults.Fault {
	f, _ := st.NewFault(nil)
	return f
}

// Fits reports why a fault of kind can act nowhere in s's topology, as a
// step of s would be refused (e.g. sentinel-failover without sentinels);
// nil if it can act somewhere, or if kind is not a fault.
func (s Scenario) Fits(kind string) error {
	return s.WithDefaults().place(Step{Fault: kind})
}

// place reports why st's fault cannot act on its target in s's topology,
// as the fault itself says (see [faults.Placer]).
func (s Scenario) place(st Step) error {
	if ClientFault(st.Fault) {
		return nil
	}
	node := st.Node
	if st.Aimed() {
		node = ""
	}
	return faults.Place(mustFault(st), s.Topology.Cluster(), node)
}

// keysRecorded checks that a fault requirement's key states are recorded
// for st: key_before for a fault on a Redis node, a client, or a client's
// link (whether that client held the lock); key_after for a fault on a
// Redis node only. A resource path has no key to read.
func keysRecorded(r evidence.Requirement, st Step) (field, msg string) {
	_, _, link := ClientLinkOf(st.Node)
	onResource := st.Node == AimHolderResource || (!st.Aimed() && !link && strings.HasPrefix(st.Node, "r"))
	switch {
	case onResource && r.KeyBefore != "":
		return "key_before", fmt.Sprintf("%s acts on a path to the resource, which holds no lock key", st.Node)
	case onResource && r.KeyAfter != "":
		return "key_after", fmt.Sprintf("%s acts on a path to the resource, which holds no lock key", st.Node)
	case (ClientFault(st.Fault) || link) && r.KeyAfter != "":
		return "key_after", fmt.Sprintf("is read from a Redis node after the fault; %s %s acts on a client, so only key_before (did it hold the lock) is recorded", st.Fault, st.Target())
	}
	return "", ""
}

// validNode accepts Redis nodes n1..nN and the clients' resource proxies r1..rC.
func validNode(name string, nodes, clients int) bool {
	for i := 1; i <= max(nodes, clients); i++ {
		if (i <= nodes && name == fmt.Sprintf("n%d", i)) || (i <= clients && name == fmt.Sprintf("r%d", i)) {
			return true
		}
	}
	if node, p, ok := ClientLinkOf(name); ok {
		return p >= 1 && p <= clients && validNode(node, nodes, 0)
	}
	return false
}

// validEtcdNode accepts, in an etcd topology, the members e1..eN, the
// resource paths r1..rC and the clients' own links to members, e<i>-c<p>.
func (s Scenario) validEtcdNode(name string) bool {
	return s.validMemberNode(name, s.Topology.Cluster().EtcdIndex)
}

// validPostgresNode accepts, in a PostgreSQL topology, the nodes p1..pN,
// the resource paths r1..rC and the clients' own links to nodes, p<i>-c<p>.
func (s Scenario) validPostgresNode(name string) bool {
	return s.validMemberNode(name, s.Topology.Cluster().PostgresIndex)
}

// validMemberNode accepts the members index numbers (index > 0), the
// resource paths r1..rC and the clients' own links to members.
func (s Scenario) validMemberNode(name string, index func(string) int) bool {
	if node, p, ok := ClientLinkOf(name); ok {
		return p >= 1 && p <= s.Clients && index(node) > 0
	}
	return validNode(name, 0, s.Clients) || index(name) > 0
}

// linkFaults are the faults a client's own link to a node takes.
var linkFaults = []string{"partition", "latency", "drop-replies", "reset"}

// ClientLinkOf splits a per-client link's name, "n1-c2" (or an etcd
// member's, "e1-c2", a PostgreSQL node's, "p1-c2", or a ZooKeeper
// member's, "z1-c2"), into its node and client.
func ClientLinkOf(name string) (node string, p int, ok bool) {
	node, c, found := strings.Cut(name, "-c")
	if !found || !(strings.HasPrefix(node, "n") || strings.HasPrefix(node, "e") || strings.HasPrefix(node, "p") || strings.HasPrefix(node, "z")) {
		return "", 0, false
	}
	p, err := strconv.Atoi(c)
	return node, p, err == nil
}

// UsesClientLinks reports whether a fault names a client's own link to a
// node ("n1-c2"), which the runner then makes for every client and node.
func (s Scenario) UsesClientLinks() bool {
	for _, st := range s.Faults {
		if _, _, ok := ClientLinkOf(st.Node); ok {
			return true
		}
	}
	return false
}
