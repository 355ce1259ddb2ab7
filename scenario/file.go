package scenario

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The built-in catalogue is written in the same YAML as user scenario files.
//
//go:embed catalogue/*.yaml
var builtin embed.FS

// loadBuiltins parses the embedded catalogue; it runs once, on first use,
// after every init has registered its subjects.
var loadBuiltins = sync.OnceFunc(func() {
	files, _ := fs.Glob(builtin, "catalogue/*.yaml")
	for _, f := range files {
		data, _ := builtin.ReadFile(f)
		s, err := Parse(f, data)
		if err != nil {
			panic(err) // a broken built-in is a build bug, caught by every test
		}
		register(s)
	}
})

// A FileError is a problem in a scenario file, with its place in the file.
type FileError struct {
	File  string
	Line  int    // 1-based; 0 when unknown
	Field string // dotted path, e.g. "faults[1].fault"; empty when unknown
	Msg   string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	return b.String() + ": " + e.Msg
}

// Unwrap lets errors.Is match [ErrBadScenario].
func (e *FileError) Unwrap() error { return ErrBadScenario }

// LoadFile reads and validates a scenario file. Problems come back as a
// *[FileError] naming the file, line and field.
func LoadFile(file string) (Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Scenario{}, &FileError{File: file, Msg: err.Error()}
	}
	return Parse(file, data)
}

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// Parse decodes and validates a scenario from YAML; file names it in errors.
// A value the file writes is used as written or refused: defaults fill
// only the fields it leaves out (see strict.go).
func Parse(file string, data []byte) (Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Scenario{}, yamlError(file, err)
	}
	if emptyFile(&root) {
		return Scenario{}, &FileError{File: file, Msg: "the file is empty: a scenario needs at least expect:"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return Scenario{}, &FileError{File: file, Line: doc.Line, Msg: "a scenario file is a mapping of fields (name:, expect:, lock:, ...), not " + found(doc)}
	}
	fe := checkTypes(doc, reflect.TypeFor[Scenario](), "")
	if fe == nil {
		fe = checkWritten(doc, "")
	}
	if arms := mappingValue(doc, "arms"); arms != nil {
		for i, a := range arms.Content {
			if fe == nil && a.Kind == yaml.MappingNode {
				fe = checkWritten(a, fmt.Sprintf("arms[%d]", i))
			}
		}
	}
	if fe != nil {
		fe.File = file
		return Scenario{}, fe
	}
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, yamlError(file, err)
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(path.Base(file), path.Ext(file))
	}
	s = s.WithDefaults()
	err := s.Validate()
	if err == nil {
		err = s.validProgram()
	}
	for i, a := range s.Arms {
		if err != nil {
			break
		}
		v, aerr := s.Arm(a.Name)
		if aerr == nil {
			aerr = v.validProgram()
		}
		if aerr != nil {
			err = armError(&root, i, aerr)
		}
	}
	if err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return Scenario{}, &FileError{File: file, Line: lineOf(&root, fe.path), Field: fe.path, Msg: fe.msg}
		}
		return Scenario{}, &FileError{File: file, Msg: err.Error()}
	}
	return s, nil
}

// armError places the problem err of the variant of arm i: at the field,
// if the arm writes it ("arms[1].lock.ttl"), else at the arm, naming the
// field of the merged scenario ("arms[1]: lock.kind: ...").
func armError(root *yaml.Node, i int, err error) error {
	arm := fmt.Sprintf("arms[%d]", i)
	var fe *fieldError
	if !errors.As(err, &fe) {
		return &fieldError{path: arm, msg: err.Error()}
	}
	if nodeAt(root, arm+"."+fe.path) != nil {
		return &fieldError{path: arm + "." + fe.path, msg: fe.msg}
	}
	return &fieldError{path: arm, msg: fe.Error()}
}

// yamlError turns a yaml.v3 error ("yaml: line 3: ..." or a TypeError with
// one "line N: ..." per problem) into a FileError for the first problem.
func yamlError(file string, err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FileError{File: file, Line: line, Msg: unknownField(m[2])}
	}
	return &FileError{File: file, Msg: strings.TrimPrefix(msg, "yaml: ")}
}

// lineOf finds the line of a dotted field path such as "faults[1].node" in a
// YAML document, falling back to the deepest part that exists.
func lineOf(root *yaml.Node, field string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range strings.Split(field, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			name = part[:i]
			idx, _ = strconv.Atoi(strings.TrimSuffix(part[i+1:], "]"))
		}
		next := mappingValue(n, name)
		if next == nil {
			return line
		}
		line = next.Line
		if idx >= 0 {
			if next.Kind != yaml.SequenceNode || idx >= len(next.Content) {
				return line
			}
			next = next.Content[idx]
			line = next.Line
		}
		n = next
	}
	return line
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// A fieldError is a validation problem with one field of a scenario.
type fieldError struct {
	path, msg string
}

func (e *fieldError) Error() string { return fmt.Sprintf("%s: %s", e.path, e.msg) }

func (e *fieldError) Unwrap() error { return ErrBadScenario }
