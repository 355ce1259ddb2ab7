package scenario

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// An Arm is a named variant of a scenario for `lockpick compare`: the fields
// it sets replace the scenario's. A section such as lock is merged field by
// field (lock: {ttl: 4s} changes only the TTL); a list such as faults is
// replaced whole.
type Arm struct {
	Name    string `json:"name" yaml:"name"`
	Summary string `json:"summary,omitempty" yaml:"summary"`
	// Expect is the arm's own expect: line; without one the arm takes the
	// scenario's (every arm of the catalogue states its own).
	Expect Expect `json:"expect,omitempty" yaml:"expect"`

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
		case "expect":
			a.Expect = Expect(v.Value)
			rest.Content = append(rest.Content, k, v) // validated with the arm's scenario
		case "arms":
			return fmt.Errorf("line %d: an arm cannot have arms", k.Line)
		default:
			rest.Content = append(rest.Content, k, v)
		}
	}
	if a.Name == "" {
		return fmt.Errorf("line %d: an arm needs a name", n.Line)
	}
	if err := knownFields(rest, reflect.TypeFor[Scenario]()); err != nil {
		return err
	}
	a.overlay = *rest
	return nil
}

// knownFields reports the first key under n that is not a field of t, as
// the scenario file's own decoder would: an arm's overlay is decoded later,
// by yaml.Node.Decode, which accepts any key, so a misspelled field would
// leave the arm silently identical to the base.
func knownFields(n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return nil // a type that reads itself, such as Duration
	}
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := yamlField(t, k.Value)
			if !ok {
				return fmt.Errorf("line %d: field %s not found in type %s", k.Line, k.Value, t.String())
			}
			if err := knownFields(v, f.Type); err != nil {
				return err
			}
		}
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for _, c := range n.Content {
			if err := knownFields(c, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlField returns the field of struct t that YAML key name decodes into.
func yamlField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == name || (tag == "" && f.IsExported() && strings.EqualFold(f.Name, name)) {
			return f, true
		}
	}
	return reflect.StructField{}, false
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
		if v.Explain == s.Explain && len(a.overlay.Content) > 0 {
			v.Explain = armExplain(a, s.Explain)
		}
		return v.WithDefaults(), v.Validate()
	}
	return Scenario{}, fmt.Errorf("%w: %s has no arm %q (arms: %s)", ErrUnknownScenario, s.Name, name, strings.Join(s.ArmNames(), ", "))
}

// armExplain is the explanation of an arm that changes the scenario but
// does not explain itself: the base's, said to be the attack without the
// arm's change, so that what it says happens is not read as the arm's result.
func armExplain(a Arm, base string) string {
	what := a.Summary
	if what == "" {
		what = "a variant of the scenario"
	}
	return fmt.Sprintf("This arm (%s): %s. The scenario it changes, as it goes without that change: %s", a.Name, strings.TrimSuffix(what, "."), base)
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

// FaultText returns the fault kinds of s's steps and everything under the
// faults of its arms, joined by spaces, for a quick search.
func (s Scenario) FaultText() string {
	var text []string
	for _, st := range s.Faults {
		text = append(text, st.Fault)
	}
	for _, a := range s.Arms {
		for i := 0; i+1 < len(a.overlay.Content); i += 2 {
			if a.overlay.Content[i].Value == "faults" {
				text = append(text, nodeText(a.overlay.Content[i+1]))
			}
		}
	}
	return strings.Join(text, " ")
}
