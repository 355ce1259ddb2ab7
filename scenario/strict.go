package scenario

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A scenario file is read strictly: every value it writes is used as
// written or refused, in the file's own words. Two checks here read the
// YAML node tree, before the decoder fills a [Scenario], because only the
// tree tells a value the file wrote from one it left out:
//
//   - checkTypes refuses a value of the wrong kind (a list where a
//     mapping goes, "two" for a number) naming its field and line, where
//     yaml.v3 would name Go types ("cannot unmarshal !!str into int");
//   - checkWritten refuses a zero written in a field whose zero means
//     "the default", which [Scenario.WithDefaults] would otherwise replace.
//
// Values out of range (a negative duration, clients: -1) are
// [Scenario.Validate]'s, which needs no tree: WithDefaults fills only
// zeros, so a negative value reaches it as written.

// checkTypes reports the first value under n (the field path, as the
// file writes it) that t cannot hold, or a key that is not a field of t,
// as a *FileError without its File; nil when every value fits.
func checkTypes(n *yaml.Node, t reflect.Type, path string) *FileError {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.ShortTag() == "!!null" {
		return nil // a zero value; checkWritten says if it may be
	}
	bad := func(format string, a ...any) *FileError {
		return &FileError{Line: n.Line, Field: path, Msg: fmt.Sprintf(format, a...)}
	}
	switch t {
	case reflect.TypeFor[Duration]():
		if n.Kind != yaml.ScalarNode {
			return bad("must be a duration like 500ms or 2s, not %s", found(n))
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			if _, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil {
				return bad("must be a duration with its unit, like %ss or %sms, not %s", n.Value, n.Value, n.Value)
			}
			return bad("must be a duration like 500ms or 2s, not %q", n.Value)
		}
		return nil
	case reflect.TypeFor[Arm]():
		if n.Kind != yaml.MappingNode {
			return bad("an arm must be a mapping with a name, like {name: fix, expect: safe}, not %s", found(n))
		}
		return checkFields(n, reflect.TypeFor[Scenario](), path, "arms") // an arm's arms are Arm.UnmarshalYAML's to refuse
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("must be a mapping of fields, like %s, not %s", example(t), found(n))
		}
		return checkFields(n, t, path, "")
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad("must be a list of %s, not %s", listOf(t.Elem(), path), found(n))
		}
		for i, c := range n.Content {
			if fe := checkTypes(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); fe != nil {
				return fe
			}
		}
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad("must be a mapping, like {delay: 3s}, not %s", found(n))
		}
		return nil
	case reflect.Interface:
		return nil
	}
	words := scalarWords[t.Kind()]
	if n.Kind != yaml.ScalarNode {
		return bad("must be %s, not %s", words, found(n))
	}
	// yaml.v3 would truncate 2.5 into a whole number, and read "3" as one.
	tag := n.ShortTag()
	whole := t.Kind() != reflect.Int || tag == "!!int"
	number := t.Kind() != reflect.Float64 || tag == "!!int" || tag == "!!float"
	if !whole || !number || n.Decode(reflect.New(t).Interface()) != nil {
		return bad("must be %s, not %q", words, n.Value)
	}
	return nil
}

// checkFields checks each key of mapping n as a field of struct t; skip
// names a key left to the decoder.
func checkFields(n *yaml.Node, t reflect.Type, path, skip string) *FileError {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "<<" || k.Value == skip {
			continue // a merge key, or the decoder's to judge
		}
		f, ok := yamlField(t, k.Value)
		if !ok {
			return &FileError{Line: k.Line, Msg: unknownField(fmt.Sprintf("field %s not found in type %s", k.Value, t.String()))}
		}
		field := k.Value
		if path != "" {
			field = path + "." + k.Value
		}
		if fe := checkTypes(v, f.Type, field); fe != nil {
			return fe
		}
	}
	return nil
}

// scalarWords says what a scalar of each kind is, in a file's words.
var scalarWords = map[reflect.Kind]string{
	reflect.Int: "a whole number", reflect.Float64: "a number", reflect.Bool: "true or false", reflect.String: "text",
}

// found says what node n is, for "must be X, not Y".
func found(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// example shows a mapping of struct t as a file writes it.
func example(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Lock]():
		return "{kind: set-nx, ttl: 2s}"
	case reflect.TypeFor[Topology]():
		return "{masters: 1, replicas: 1}"
	case reflect.TypeFor[Step]():
		return "{at: 1s, fault: kill, node: n1}"
	case reflect.TypeFor[When]():
		return "{event: granted, client: 1}"
	case reflect.TypeFor[ExploreSpec]():
		return "{max_faults: 4}"
	case reflect.TypeFor[Scenario]():
		return "name: x, expect: safe"
	}
	return "{grants: 1}" // evidence.Requirement, the last struct of a file
}

// listOf says what the list at path holds, of elements of type t.
func listOf(t reflect.Type, path string) string {
	field := path[strings.LastIndexByte(path, '.')+1:]
	switch {
	case t == reflect.TypeFor[Step]():
		return "faults, each like {at: 1s, fault: kill, node: n1}"
	case t == reflect.TypeFor[Arm]():
		return "arms, each like {name: fix, expect: safe}"
	case t == reflect.TypeFor[Duration]() && field == "hold":
		return "two durations, like [100ms, 1s]"
	case t == reflect.TypeFor[Duration]():
		return "durations, like [0s, 3s]"
	case t.Kind() == reflect.Struct:
		return "requirements, each like {grants: 1}"
	case t.Kind() == reflect.Int && field == "isolate":
		return "client numbers, like [1, 2]"
	case t.Kind() == reflect.Int:
		return "whole numbers, like [3, 0]"
	}
	switch field {
	case "command":
		return "words, the program and its arguments, like [bin/mylock, -v]"
	case "nodes":
		return "node names, like [n1, n2]"
	case "faults":
		return "fault kinds, like [kill, partition]"
	case "tolerate":
		return "anomaly kinds, like [stuck-lock]"
	case "caps":
		return "capabilities, like [block, renew, fence]"
	}
	return "names, like [quick, ci]"
}

// A defaulted field is one whose zero means "the default": a file that
// writes the zero would get the default instead, so it may not.
type defaulted struct {
	path string // as the file writes it
	text bool   // a text field: its zero is ""
	// inArms: the zero is refused in an arm too. Elsewhere an arm's zero
	// puts back the default, dropping the scenario's setting (a multilock
	// arm's node_timeout: 0s of a Redlock scenario).
	inArms bool
	dflt   string // what leaving it out gives
}

var defaulteds = []defaulted{
	{path: "name", text: true, dflt: "the file's name"},
	{path: "clients", inArms: true, dflt: "2"},
	{path: "hold", inArms: true, dflt: "100ms"},
	{path: "duration", inArms: true, dflt: "2s"},
	{path: "lock.kind", text: true, inArms: true, dflt: "set-nx"},
	{path: "lock.key", text: true, inArms: true, dflt: "lock"},
	{path: "lock.ttl", inArms: true, dflt: "2s"},
	{path: "lock.retry_delay", inArms: true, dflt: "50ms"},
	{path: "lock.wait_timeout", dflt: "100ms"},
	{path: "lock.node_timeout", dflt: "the lock's own"},
	{path: "lock.drift_factor", dflt: "0.01"},
	{path: "topology.masters", dflt: "1"},
	{path: "topology.down_after", dflt: "500ms"},
	{path: "topology.node_timeout", dflt: "500ms"},
	{path: "explore.max_faults", dflt: "4"},
}

// checkWritten reports the first zero that mapping n (the file, or an
// arm: path "arms[i]") writes in a field whose zero means the default.
func checkWritten(n *yaml.Node, path string) *FileError {
	arm := path != ""
	for _, d := range defaulteds {
		v := nodeAt(n, d.path)
		if v == nil || (arm && !d.inArms) || !zeroNode(v, d.text) {
			continue
		}
		what := "must be above 0"
		switch {
		case d.text:
			what = "must not be empty"
		case d.path == "clients" || d.path == "topology.masters":
			what = "must be at least 1"
		}
		written := v.Value
		switch {
		case v.ShortTag() == "!!null":
			written = "nothing"
		case d.text:
			written = strconv.Quote(v.Value)
		}
		return &FileError{Line: v.Line, Field: armField(path, d.path),
			Msg: fmt.Sprintf("%s, not %s (leave it out for the default, %s)", what, written, d.dflt)}
	}
	require := nodeAt(n, "require")
	if require == nil || require.Kind != yaml.SequenceNode {
		return nil
	}
	for i, r := range require.Content {
		// min: 0 of refused or prevented would count as min: 1.
		if v := nodeAt(r, "min"); v != nil && zeroNode(v, false) && nodeAt(r, "anomaly") == nil {
			return &FileError{Line: v.Line, Field: armField(path, fmt.Sprintf("require[%d].min", i)),
				Msg: "must be at least 1 (leave it out for the default, 1)"}
		}
	}
	return nil
}

// armField is field under arm ("arms[1]"), or field itself for the
// scenario's own ("").
func armField(arm, field string) string {
	if arm == "" {
		return field
	}
	return arm + "." + field
}

// zeroNode reports whether scalar n is a zero: empty, null, or a number
// or duration of 0 (only empty and null for text).
func zeroNode(n *yaml.Node, text bool) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	if n.ShortTag() == "!!null" || n.Value == "" {
		return true
	}
	if text {
		return false
	}
	if d, err := time.ParseDuration(n.Value); err == nil {
		return d == 0
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	return err == nil && f == 0
}

// nodeAt returns the value at a dotted field path such as
// "faults[1].node" in a YAML document or mapping, or nil if the file does
// not write it.
func nodeAt(n *yaml.Node, field string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, part := range strings.Split(field, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			name = part[:i]
			idx, _ = strconv.Atoi(strings.TrimSuffix(part[i+1:], "]"))
		}
		if n = mappingValue(n, name); n == nil {
			return nil
		}
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return nil
			}
			n = n.Content[idx]
		}
	}
	return n
}

// emptyFile reports whether a parsed file holds no document, or only a
// null one ("---", a file of comments).
func emptyFile(root *yaml.Node) bool {
	if root.Kind == 0 || (root.Kind == yaml.DocumentNode && len(root.Content) == 0) {
		return true
	}
	doc := root.Content[0]
	return doc.Kind == yaml.ScalarNode && doc.ShortTag() == "!!null"
}

// validProgram checks that the external subject's program is there, as
// it will be started: a path (with a slash) to an executable file, or a
// name found on PATH. It reports a *fieldError for lock.command.
func (s Scenario) validProgram() error {
	if len(s.Lock.Command) == 0 {
		return nil
	}
	prog := s.Lock.Command[0]
	_, err := exec.LookPath(prog)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrDot):
		return bad("lock.command", "%s is found only in the current directory, through PATH: write ./%s", prog, prog)
	case prog == "":
		return bad("lock.command", "the program's name is empty")
	case strings.Contains(prog, "/"):
		if st, serr := os.Stat(prog); serr != nil || st.IsDir() {
			return bad("lock.command", "no program %s: not a file", prog)
		}
		return bad("lock.command", "%s is not an executable file (chmod +x?)", prog)
	}
	return bad("lock.command", "no program %q on PATH (give its path, e.g. ./%s)", prog, prog)
}
