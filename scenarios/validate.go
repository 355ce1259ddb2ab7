package scenarios

import "fmt"

// Validate reports the first problem with s, wrapping [ErrBadScenario].
func (s Scenario) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadScenario, s.Name, fmt.Sprintf(format, a...))
	}
	switch s.Expect {
	case Safe, Unsafe, Stuck:
	default:
		return bad("expect must be safe, unsafe or stuck, not %q", s.Expect)
	}
	if s.Lock.Kind != "set-nx" {
		return bad("unknown lock kind %q", s.Lock.Kind)
	}
	nodes := max(s.Topology.Masters, 1) + s.Topology.Replicas
	for _, st := range s.Faults {
		if err := st.validate(); err != nil {
			return bad("%v", err)
		}
		if !validNode(st.Node, nodes) {
			return bad("fault %q names node %q; the topology has n1..n%d", st.Fault, st.Node, nodes)
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
