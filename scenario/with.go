package scenario

import (
	"fmt"
	"path/filepath"
	"slices"
)

// A shape is the deployment a lock is written for.
type shape int

const (
	anyShape       shape = iota // the subject decides (external programs)
	singleInstance              // one master, maybe with replicas and sentinels
	independent                 // Redlock: independent masters, no replicas
	onEtcd                      // etcd members
	onPostgres                  // PostgreSQL nodes
	onZooKeeper                 // ZooKeeper members
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
	// ShapePostgres is a lock on PostgreSQL nodes.
	ShapePostgres = "postgres"
	// ShapeZooKeeper is a lock on a ZooKeeper ensemble.
	ShapeZooKeeper = "zookeeper"
)

// shapes maps the declarable shapes to the ones the traits use.
var shapes = map[string]shape{"": anyShape, ShapeSingle: singleInstance, ShapeRedlock: independent, ShapeEtcd: onEtcd, ShapePostgres: onPostgres,
	ShapeZooKeeper: onZooKeeper}

// WithSubject returns s with the lock under test replaced by the subject
// kind, for `lockpick run --subject`, named "<scenario>@<subject>" and
// without arms (they name locks of their own). It expects [Conclusive]: the
// scenario's own expect is about lockpick's lock, not the subject. command
// runs the external subject and is nil for every other kind.
//
// The attack is the scenario's topology, clients and faults, not how
// lockpick's lock is built: a setting of the scenario's lock that only
// configures lockpick's lock, and that the subject does not honour, is
// dropped (zeroed), and listed in the result's Dropped; so is acquire:
// block for a lock that does not wait itself (its clients retry). The
// requirements written in the words of the scenario's lock are restated
// as what happened, or dropped (see docs/subjects.md). Where the subject cannot meet
// the attack it returns a *[MisfitError] (wrapping [ErrBadScenario]) that
// says why: a topology of the wrong shape (a Redlock-style lock needs
// independent masters, a single-instance lock one master), a setting that
// is the attack (a crash between two commands of the legacy lock), a
// fenced resource for a lock without fencing tokens. An unknown kind is a
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
	if _, known := shapes[declared]; !known || (declared != "" && kind != "external") {
		return Scenario{}, fmt.Errorf("%w: a shape (%s, %s or %s) is declared by a lock program (external), not %q for %s",
			ErrBadScenario, ShapeSingle, ShapeRedlock, ShapeEtcd, declared, kind)
	}
	return s.retarget(kind, Program{Command: command, Shape: declared})
}

// WithProgram is [Scenario.WithSubject] for lock program p (kind
// "external"), with its shape and capabilities: the result's Lock.Caps are
// p's. A program that declares caps is kept out, with the reason, of a
// fenced scenario unless it declares fence, and of a scenario that attacks
// a lock renewing its lease (holders keep the lock longer than the lease,
// or the attack meets the renewal) unless it declares renew; one that
// declares block runs acquire: block as a blocking acquire. A scenario
// whose attack is a skewed client clock keeps out a Go program, whose
// clock the clock shim cannot reach. A bad shape or capability is an
// error wrapping [ErrBadScenario].
func (s Scenario) WithProgram(p Program) (Scenario, error) {
	if _, known := shapes[p.Shape]; !known {
		return Scenario{}, fmt.Errorf("%w: a lock program's shape is %s, %s or %s, not %q", ErrBadScenario, ShapeSingle, ShapeRedlock, ShapeEtcd, p.Shape)
	}
	if i, msg := badCap(p.Caps); msg != "" {
		return Scenario{}, fmt.Errorf("%w: capability %q: %s", ErrBadScenario, p.Caps[i], msg)
	}
	return s.retarget("external", p)
}

// retarget is [Scenario.WithProgram] for any subject kind, p's shape and
// caps already checked (only a lock program, kind external, has them).
func (s Scenario) retarget(kind string, p Program) (Scenario, error) {
	s = s.WithDefaults()
	if !knownLock(kind) {
		return Scenario{}, fmt.Errorf("%w: unknown subject %q (known: %s)", ErrBadScenario, kind, lockKinds())
	}
	if kind == s.Lock.Kind && slices.Equal(p.Command, s.Lock.Command) && (p.Caps == nil || slices.Equal(p.Caps, s.Lock.Caps)) {
		s.Expect = Conclusive
		return s, nil
	}
	doesNotFit := func(format string, a ...any) error {
		return &MisfitError{Subject: kind, Scenario: s.Name, Reason: fmt.Sprintf(format, a...)}
	}
	v := s
	v.Dropped = nil
	tr, ok := TraitsOf(kind)
	if kind == "external" {
		tr, ok = programTraits(p), true
	}
	if ok {
		if why := s.shapeMisfit(kind, tr); why != "" {
			return Scenario{}, &MisfitError{Subject: kind, Scenario: s.Name, Reason: why, OtherShape: true}
		}
		why, dropped := s.fit(kind, p, tr)
		if why != "" {
			return Scenario{}, doesNotFit("%s", why)
		}
		for _, set := range dropped {
			v.drop(set)
			v.Dropped = append(v.Dropped, s.droppedNote(kind, set))
		}
		v.Require = s.proofsFor(dropped)
	}
	v.Lock.Kind, v.Lock.Command, v.Lock.Caps = kind, p.Command, nil
	if kind == "external" {
		v.Lock.Caps = p.Caps
	}
	v.Name = s.Name + "@" + kind
	if kind == "external" && len(p.Command) > 0 {
		v.Name = s.Name + "@" + filepath.Base(p.Command[0])
	}
	v.Arms, v.Expect = nil, Conclusive
	if err := v.Validate(); err != nil {
		return Scenario{}, doesNotFit("%v", err)
	}
	return v, nil
}

// shapeMisfit says why a lock of traits tr cannot be put through s's
// topology, or "" if it can.
func (s Scenario) shapeMisfit(kind string, tr Traits) string {
	sh, masters := shapes[tr.Shape], max(s.Topology.Masters, 1)
	switch {
	case sh == onZooKeeper && s.Topology.ZooKeeper == 0:
		return "it is a ZooKeeper lock, and the scenario runs no ZooKeeper members"
	case sh != onZooKeeper && sh != anyShape && s.Topology.ZooKeeper > 0:
		return "it is not a ZooKeeper lock, and the scenario runs ZooKeeper members"
	case sh == onPostgres && s.Topology.Postgres == 0:
		return "it is a PostgreSQL lock, and the scenario runs no PostgreSQL nodes"
	case sh != onPostgres && sh != anyShape && s.Topology.Postgres > 0:
		return "it is not a PostgreSQL lock, and the scenario runs PostgreSQL nodes"
	case sh == onEtcd && s.Topology.Etcd == 0:
		return "it is an etcd lock, and the scenario runs Redis nodes"
	case sh != onEtcd && sh != anyShape && s.Topology.Etcd > 0:
		return "it is a Redis lock, and the scenario runs etcd members"
	case sh == singleInstance && masters > 1:
		return fmt.Sprintf("it is a single-instance lock, and the scenario is a Redlock topology of %d independent masters", masters)
	case sh == independent && s.Topology.Shards > 0 && kind != "redlock":
		return "over one Redis Cluster's primaries it needs a key per shard, which lockpick builds only for its own Redlock"
	case sh == independent && s.Topology.Shards == 0 && s.Topology.Replicas > 0:
		return "it is Redlock over independent masters, and the scenario's master has replicas that sentinels promote"
	}
	return ""
}

// fit sorts the settings of s's lock that a subject of traits tr does not
// honour: it returns why the subject cannot meet the attack, or the
// settings to run without. p is the lock program, for kind external.
func (s Scenario) fit(kind string, p Program, tr Traits) (why string, dropped []string) {
	program := kind == "external"
	for _, set := range s.settings() {
		r := settingRules[set]
		switch {
		case set == "clock_skew" && program && goProgram(p.Command):
			return fmt.Sprintf("the scenario's lock sets clock_skew: %s, which reaches a lock program through lockpick's clock shim, "+
				"preloaded into libc (LD_PRELOAD); %s is a Go program, which reads the clock from the vDSO, past the shim",
				r.attack, filepath.Base(p.Command[0])), nil
		case tr.honours(set):
		case set == "fenced" && program:
			return "the scenario fences the resource; your lock hands out no fencing token (it does not declare " + CapFence + ")", nil
		case set == "fenced":
			return fmt.Sprintf("the scenario's lock sets fenced, which only %s honours: the scenario fences the resource, "+
				"and %s hands out no fencing token", honouredBy(set), kind), nil
		case r.class == attackSetting:
			return fmt.Sprintf("the scenario's lock sets %s, which only %s honours: %s", set, honouredBy(set), r.attack), nil
		default:
			dropped = append(dropped, set)
		}
	}
	if renew := s.renewal(); renew != "" && program && p.Caps != nil && !slices.Contains(p.Caps, CapRenew) {
		return fmt.Sprintf("the scenario attacks a lock that renews its lease: %s; your lock does not renew its lease (it does not declare %s)",
			renew, CapRenew), nil
	}
	return "", dropped
}

// droppedNote says which lock's setting set is, for [Scenario].Dropped:
// "sequential (a setting of lockpick's redlock)".
func (s Scenario) droppedNote(kind, set string) string {
	if set != "acquire" {
		return fmt.Sprintf("%s (a setting of %s)", set, settingRules[set].of)
	}
	what := "acquire: block"
	if s.Lock.Wait != 0 {
		what += fmt.Sprintf(" and its wait: %v", s.Lock.Wait.D())
	}
	who := kind + " does not wait for the lock itself"
	if kind == "external" {
		who = "your lock does not declare " + CapBlock
	}
	return fmt.Sprintf("%s (%s: its clients try, and retry every %v)", what, who, s.Lock.RetryDelay.D())
}

// A MisfitError says why a subject cannot be put through a scenario; it
// wraps [ErrBadScenario].
type MisfitError struct {
	Subject, Scenario, Reason string
	// OtherShape marks a scenario whose topology is of another shape than
	// the subject's lock (a Redlock topology for a single-instance lock):
	// a scenario not meant for it, rather than an attack it cannot meet.
	OtherShape bool
}

func (e *MisfitError) Error() string {
	return fmt.Sprintf("%v: subject %s does not fit %s: %s", ErrBadScenario, e.Subject, e.Scenario, e.Reason)
}

func (e *MisfitError) Unwrap() error { return ErrBadScenario }
