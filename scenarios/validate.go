package scenarios

import "fmt"

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
	nodes := max(s.Topology.Masters, 1) + s.Topology.Replicas
	for i, st := range s.Faults {
		field := fmt.Sprintf("faults[%d]", i)
		if err := st.validate(); err != nil {
			return bad(field+".fault", "%v", err)
		}
		if !validNode(st.Node, nodes) {
			return bad(field+".node", "no node %q; the topology has n1..n%d", st.Node, nodes)
		}
		if st.At < 0 || st.Jitter < 0 {
			return bad(field+".at", "times must not be negative")
		}
	}
	return nil
}

func validNode(name string, n int) bool {
	for i := 1; i <= n; i++ {
		if name == fmt.Sprintf("n%d", i) {
			return true
		}
	}
	return false
}
