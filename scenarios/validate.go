package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
)

// Validate reports the first problem with s as an error wrapping
// [ErrBadScenario] that names the field at fault.
func (s Scenario) Validate() error {
	bad := func(field, format string, a ...any) error {
		return &fieldError{path: field, msg: fmt.Sprintf(format, a...)}
	}
	switch s.Expect {
	case Safe, Unsafe, Stuck:
	default:
		return bad("expect", "must be safe, unsafe or stuck, not %q", s.Expect)
	}
	if !knownLock(s.Lock.Kind) {
		return bad("lock.kind", "unknown lock %q (known: %s)", s.Lock.Kind, lockKinds())
	}
	if s.Topology.Masters < 0 || s.Topology.Replicas < 0 || s.Topology.Sentinels < 0 {
		return bad("topology", "node counts must not be negative")
	}
	if s.Topology.Sentinels > 0 && s.Topology.Replicas == 0 {
		return bad("topology.sentinels", "sentinels need at least one replica to promote")
	}
	switch s.Topology.Persistence {
	case "", "none", "aof-everysec", "aof-always":
	default:
		return bad("topology.persistence", "must be none, aof-everysec or aof-always, not %q", s.Topology.Persistence)
	}
	for i, k := range s.Tolerate {
		switch checker.Kind(k) {
		case checker.DoubleGrant, checker.StaleWrite, checker.LostUpdate, checker.StuckLock, checker.Starvation:
		default:
			return bad(fmt.Sprintf("tolerate[%d]", i), "unknown anomaly kind %q", k)
		}
	}
	if s.Lock.CrashAfterSetNX != 0 && (s.Lock.Kind != "setnx-expire" || !slices.Contains(s.Isolate, s.Lock.CrashAfterSetNX)) {
		return bad("lock.crash_after_setnx", "needs lock kind setnx-expire and an isolated client")
	}
	if s.Lock.PauseAfterSetNX < 0 {
		return bad("lock.pause_after_setnx", "must not be negative")
	}
	if s.Lock.PauseAfterSetNX != 0 && s.Lock.Kind != "setnx-expire" {
		return bad("lock.pause_after_setnx", "needs lock kind setnx-expire")
	}
	if s.Fenced && s.Lock.Kind != "set-nx" && s.Lock.Kind != "external" {
		return bad("fenced", "only the set-nx lock and external subjects hand out fencing tokens")
	}
	if (s.Lock.Kind == "external") != (len(s.Lock.Command) > 0) {
		return bad("lock.command", "the external subject, and only it, needs the command that runs it")
	}
	nodes := s.Topology.Nodes()
	for i, c := range s.Isolate {
		if c < 1 || c > s.Clients {
			return bad(fmt.Sprintf("isolate[%d]", i), "no client %d; clients are 1..%d", c, s.Clients)
		}
	}
	for i, st := range s.Faults {
		field := fmt.Sprintf("faults[%d]", i)
		if err := st.validate(); err != nil {
			return bad(field+".fault", "%v", err)
		}
		if st.aimed() {
			if msg := s.validAim(st); msg != "" {
				return bad(field+".node", "%s", msg)
			}
		} else if clientFault(st.Fault) {
			if !slices.Contains(s.Isolate, st.Client) {
				return bad(field+".client", "client %d is not in isolate %v; only isolated clients can be paused or killed", st.Client, s.Isolate)
			}
		} else if !validNode(st.Node, nodes, s.Clients) {
			return bad(field+".node", "no node %q; the topology has n1..n%d and the resource paths r1..r%d", st.Node, nodes, s.Clients)
		}
		if st.At < 0 || st.Jitter < 0 || st.For < 0 {
			return bad(field+".at", "times must not be negative")
		}
		if due := st.At + st.Jitter; due >= s.Duration {
			return bad(field+".at", "due at %v (at %v + jitter %v) but the trial lasts %v: it would never fire", due.D(), st.At.D(), st.Jitter.D(), s.Duration.D())
		}
	}
	if e := s.Explore; e != nil {
		kinds := append(slices.DeleteFunc(cluster.FaultKinds(), func(k string) bool { return k == "pause-process" }), "pause-client")
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
	}
	for i, r := range s.Require {
		if f, msg := r.Validate(); msg != "" {
			return bad(joinField(fmt.Sprintf("require[%d]", i), f), "%s", msg)
		}
		if err := s.knownFault(r); err != "" {
			return bad(fmt.Sprintf("require[%d]", i), "%s", err)
		}
	}
	return nil
}

func joinField(path, field string) string {
	if field == "" {
		return path
	}
	return path + "." + field
}

// knownFault checks that a requirement naming a fault ("after: kill n4",
// "fault: restart, node: n3") names one of the schedule.
func (s Scenario) knownFault(r evidence.Requirement) string {
	what := r.After
	if r.Fault != "" {
		what = strings.TrimSpace(r.Fault + " " + r.Node)
	}
	if what == "" {
		return ""
	}
	kind, target, _ := strings.Cut(what, " ")
	for _, st := range s.Faults {
		if st.Fault == kind && (target == "" || st.target() == target) {
			return ""
		}
	}
	return fmt.Sprintf("no fault %q in the schedule", what)
}

// validNode accepts Redis nodes n1..nN and the clients' resource proxies r1..rC.
func validNode(name string, nodes, clients int) bool {
	for i := 1; i <= max(nodes, clients); i++ {
		if (i <= nodes && name == fmt.Sprintf("n%d", i)) || (i <= clients && name == fmt.Sprintf("r%d", i)) {
			return true
		}
	}
	return false
}
