package scenarios

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// An Arm is a named variant of a scenario for `lockpick compare`: the fields
// it sets replace the scenario's. A section such as lock is merged field by
// field (lock: {ttl: 4s} changes only the TTL); a list such as faults is
// replaced whole.
type Arm struct {
	Name    string `json:"name" yaml:"name"`
	Summary string `json:"summary,omitempty" yaml:"summary"`

	overlay yaml.Node
}

// UnmarshalYAML keeps the arm's fields to apply later in [Scenario.Arm].
func (a *Arm) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: an arm is a mapping with a name", n.Line)
	}
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k, v := n.Content[i], n.Content[i+1]; k.Value {
		case "name":
			a.Name = v.Value
		case "summary":
			a.Summary = v.Value
		case "arms":
			return fmt.Errorf("line %d: an arm cannot have arms", k.Line)
		default:
			rest.Content = append(rest.Content, k, v)
		}
	}
	if a.Name == "" {
		return fmt.Errorf("line %d: an arm needs a name", n.Line)
	}
	a.overlay = *rest
	return nil
}

// Arm returns the scenario with the named arm's fields applied, named
// "<scenario>[<arm>]". It wraps [ErrUnknownScenario] for an unknown arm.
func (s Scenario) Arm(name string) (Scenario, error) {
	for _, a := range s.Arms {
		if a.Name != name {
			continue
		}
		v := s
		v.Faults = append([]Step(nil), s.Faults...)
		v.Arms = nil
		if err := a.overlay.Decode(&v); err != nil {
			return Scenario{}, fmt.Errorf("%w: arm %q of %s: %v", ErrBadScenario, name, s.Name, err)
		}
		v.Name = s.Name + "[" + name + "]"
		if a.Summary != "" {
			v.Summary = a.Summary
		}
		return v.withDefaults(), v.Validate()
	}
	return Scenario{}, fmt.Errorf("%w: %s has no arm %q (arms: %s)", ErrUnknownScenario, s.Name, name, strings.Join(s.ArmNames(), ", "))
}

// ArmNames lists the scenario's arms in file order.
func (s Scenario) ArmNames() []string {
	names := make([]string, len(s.Arms))
	for i, a := range s.Arms {
		names[i] = a.Name
	}
	return names
}

// nodeText returns the scalar values under n, joined, for a quick search.
func nodeText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var parts []string
	for _, c := range n.Content {
		parts = append(parts, nodeText(c))
	}
	return strings.Join(parts, " ")
}
