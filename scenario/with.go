package scenario

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// A shape is the deployment a lock is written for.
type shape int

const (
	anyShape       shape = iota // the subject decides (external programs)
	singleInstance              // one master, maybe with replicas and sentinels
	independent                 // Redlock: independent masters, no replicas
	onEtcd                      // etcd members
)

// The shapes a lock program can declare (`--subject-shape`), so that the
// scenarios it cannot meet are skipped, as a built-in subject's are.
const (
	// ShapeSingle is a single-instance Redis lock: one master, maybe with
	// replicas and sentinels, or the primary serving the key in a Redis
	// Cluster.
	ShapeSingle = "single"
	// ShapeRedlock is a lock over independent Redis masters.
	ShapeRedlock = "redlock"
	// ShapeEtcd is a lock on etcd members.
	ShapeEtcd = "etcd"
)

// shapes maps the declarable shapes to the ones the traits use.
var shapes = map[string]shape{ShapeSingle: singleInstance, ShapeRedlock: independent, ShapeEtcd: onEtcd}

// A subjectTraits says which scenarios a subject can be put through: its
// shape, and the lock settings beyond key, ttl and retry_delay it honours.
type subjectTraits struct {
	shape   shape
	honours []string
}

// traits of the subjects built into lockpick. A subject registered
// elsewhere has none, and only [Scenario.Validate] checks it.
var traits = map[string]subjectTraits{
	"set-nx":       {singleInstance, []string{"wait_replicas", "wait_timeout", "fenced", "clock_skew", "acquire"}},
	"reentrant":    {singleInstance, []string{"fenced", "no_watchdog", "clock_skew", "acquire", "reenter", "stop_renewing_on_error", "count_every_acquire"}},
	"setnx-expire": {singleInstance, []string{"crash_after_setnx", "pause_after_setnx", "clock_skew", "acquire"}},
	"getset":       {singleInstance, []string{"clock_skew", "acquire", "naive_recovery", "recovery_pause"}},
	"redlock": {independent, []string{"node_timeout", "release_acquired_only", "clock_skew", "acquire", "sequential", "greedy",
		"give_up_early", "rotate_order", "fixed_retry_delay", "drift_factor", "wait_all", "tries", "ignore_elapsed"}},
	"multilock":   {independent, []string{"no_watchdog", "clock_skew", "acquire", "rotate_order", "all_nodes"}},
	"redislock":   {singleInstance, nil},
	"redsync":     {independent, []string{"node_timeout"}},
	"external":    {anyShape, []string{"fenced", "node_timeout"}},
	"etcd-mutex":  {onEtcd, []string{"fenced", "acquire", "require_leader"}},
	"etcd-v3lock": {onEtcd, []string{"acquire"}},
	"none":        {anyShape, nil},
}

// settings lists the lock settings s uses beyond key, ttl and retry_delay.
func (s Scenario) settings() []string {
	l := s.Lock
	var set []string
	add := func(on bool, name string) {
		if on {
			set = append(set, name)
		}
	}
	add(l.WaitReplicas != 0, "wait_replicas")
	add(l.WaitTimeout != 0, "wait_timeout")
	add(l.NodeTimeout != 0, "node_timeout")
	add(l.ReleaseAcquiredOnly, "release_acquired_only")
	add(l.RequireLeader, "require_leader")
	add(l.NoWatchdog, "no_watchdog")
	add(len(l.ClockSkew) > 0, "clock_skew")
	add(l.CrashAfterSetNX != 0, "crash_after_setnx")
	add(l.PauseAfterSetNX != 0, "pause_after_setnx")
	add(s.Fenced, "fenced")
	add(l.Acquire == AcquireBlock, "acquire")
	add(l.Sequential, "sequential")
	add(l.Greedy, "greedy")
	add(l.GiveUpEarly, "give_up_early")
	add(l.RotateOrder, "rotate_order")
	add(l.FixedRetryDelay, "fixed_retry_delay")
	add(l.DriftFactor != 0, "drift_factor")
	add(l.WaitAll, "wait_all")
	add(l.Tries != 0, "tries")
	add(l.IgnoreElapsed, "ignore_elapsed")
	add(l.NaiveRecovery, "naive_recovery")
	add(l.RecoveryPause != 0, "recovery_pause")
	add(l.Reenter != 0, "reenter")
	add(l.StopRenewingOnError, "stop_renewing_on_error")
	add(l.AllNodes, "all_nodes")
	add(l.CountEveryAcquire, "count_every_acquire")
	return set
}

// WithSubject returns s with the lock under test replaced by the subject
// kind, for `lockpick run --subject`, named "<scenario>@<subject>" and
// without arms (they name locks of their own). It expects [Conclusive]: the
// scenario's own expect is about lockpick's lock, not the subject. command runs the external
// subject and is nil for every other kind. Where the subject cannot be put
// through s it returns a *[MisfitError] (wrapping [ErrBadScenario]) that
// says why: a topology of the wrong shape (a Redlock-style lock needs
// independent masters, a single-instance lock one master), or a setting of
// the scenario's lock the subject does not honour. An unknown kind is a
// plain error wrapping [ErrBadScenario].
func (s Scenario) WithSubject(kind string, command []string) (Scenario, error) {
	return s.WithSubjectShape(kind, command, "")
}

// WithSubjectShape is [Scenario.WithSubject] for a lock program (kind
// "external") that declares its shape (ShapeSingle, ShapeRedlock or
// ShapeEtcd; "" declares none): a scenario of another shape is a misfit,
// as for a built-in subject. A shape given for another kind, or an
// unknown one, is an error wrapping [ErrBadScenario].
func (s Scenario) WithSubjectShape(kind string, command []string, declared string) (Scenario, error) {
	s = s.WithDefaults()
	if !knownLock(kind) {
		return Scenario{}, fmt.Errorf("%w: unknown subject %q (known: %s)", ErrBadScenario, kind, lockKinds())
	}
	if kind == s.Lock.Kind && slices.Equal(command, s.Lock.Command) {
		s.Expect = Conclusive
		return s, nil
	}
	doesNotFit := func(format string, a ...any) error {
		return &MisfitError{Subject: kind, Scenario: s.Name, Reason: fmt.Sprintf(format, a...)}
	}
	tr, ok := traits[kind]
	if declared != "" {
		sh, known := shapes[declared]
		if kind != "external" || !known {
			return Scenario{}, fmt.Errorf("%w: a shape (%s, %s or %s) is declared by a lock program (external), not %q for %s",
				ErrBadScenario, ShapeSingle, ShapeRedlock, ShapeEtcd, declared, kind)
		}
		tr.shape = sh
	}
	if ok {
		masters := max(s.Topology.Masters, 1)
		switch {
		case tr.shape == onEtcd && s.Topology.Etcd == 0:
			return Scenario{}, doesNotFit("it is an etcd lock, and the scenario runs Redis nodes")
		case tr.shape != onEtcd && tr.shape != anyShape && s.Topology.Etcd > 0:
			return Scenario{}, doesNotFit("it is a Redis lock, and the scenario runs etcd members")
		case tr.shape == singleInstance && masters > 1:
			return Scenario{}, doesNotFit("it is a single-instance lock, and the scenario is a Redlock topology of %d independent masters", masters)
		case tr.shape == independent && s.Topology.Shards > 0 && kind != "redlock":
			return Scenario{}, doesNotFit("over one Redis Cluster's primaries it needs a key per shard, which lockpick builds only for its own Redlock")
		case tr.shape == independent && s.Topology.Shards == 0 && s.Topology.Replicas > 0:
			return Scenario{}, doesNotFit("it is Redlock over independent masters, and the scenario's master has replicas that sentinels promote")
		}
		for _, set := range s.settings() {
			if !slices.Contains(tr.honours, set) {
				return Scenario{}, doesNotFit("the scenario's lock sets %s, which only %s honours", set, honouredBy(set))
			}
		}
	}
	v := s
	v.Lock.Kind, v.Lock.Command = kind, command
	v.Name = s.Name + "@" + kind
	if kind == "external" && len(command) > 0 {
		v.Name = s.Name + "@" + filepath.Base(command[0])
	}
	v.Arms, v.Expect = nil, Conclusive
	if err := v.Validate(); err != nil {
		return Scenario{}, doesNotFit("%v", err)
	}
	return v, nil
}

// A MisfitError says why a subject cannot be put through a scenario; it
// wraps [ErrBadScenario].
type MisfitError struct {
	Subject, Scenario, Reason string
}

func (e *MisfitError) Error() string {
	return fmt.Sprintf("%v: subject %s does not fit %s: %s", ErrBadScenario, e.Subject, e.Scenario, e.Reason)
}

func (e *MisfitError) Unwrap() error { return ErrBadScenario }

// honouredBy lists the subjects that honour a lock setting.
func honouredBy(setting string) string {
	var kinds []string
	for k, tr := range traits {
		if slices.Contains(tr.honours, setting) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return strings.Join(kinds, " and ")
}
