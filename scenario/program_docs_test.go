package scenario_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

const (
	programTableBegin = "<!-- program-table: begin (go test ./scenario -run TestDocs_ProgramTable; UPDATE_DOCS=1 rewrites it) -->\n"
	programTableEnd   = "<!-- program-table: end -->"
)

// TestDocs_ProgramTable: the table of docs/subjects.md that says which
// scenarios a lock program meets, by shape and by what it declares, is the
// catalogue's: it cannot drift. UPDATE_DOCS=1 rewrites it.
func TestDocs_ProgramTable(t *testing.T) {
	const page = "../docs/subjects.md"
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, programTableBegin), strings.Index(text, programTableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", page, programTableBegin, programTableEnd)
	}
	want := programTable(t)
	if got := text[i+len(programTableBegin) : j]; got != want {
		if os.Getenv("UPDATE_DOCS") != "" {
			if err := os.WriteFile(page, []byte(text[:i+len(programTableBegin)]+want+text[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's program table is not the catalogue's; want:\n%s", page, want)
	}
}

// A declaration is what a lock program declares, as the table shows it.
type declaration struct {
	head    string
	goProg  bool // a Go binary (the test binary) rather than a script
	caps    []string
	explain string // heading of its list of skips, "" for none
}

// programTable renders the table: for each shape, how many scenarios a
// program meets as it declares more or less, and why each skip.
func programTable(t *testing.T) string {
	decls := []declaration{
		{head: "met, declaring `block,renew,fence`", caps: allCaps,
			explain: "Skipped for a program that declares `block,renew,fence`: attacks on a command sequence of lockpick's legacy locks, which a lock of another design does not send."},
		{head: "declaring nothing (no `--subject-caps`)"},
		{head: "declaring `none`", caps: []string{},
			explain: "Skipped besides for a program that declares `none` (or caps without `fence` or `renew`):"},
		{head: "a Go program, `block,renew,fence`", goProg: true, caps: allCaps,
			explain: "Skipped besides for a Go program, whatever it declares: the attack is a client clock skew, which lockpick's clock shim cannot give it."},
	}
	var b strings.Builder
	b.WriteString("| shape | scenarios of that shape |")
	for _, d := range decls {
		b.WriteString(" " + d.head + " |")
	}
	b.WriteString(" skipped, declaring `block,renew,fence` (why: below) |")
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(decls)+1) + "\n")
	skips := make([]map[string]string, len(decls)) // by declaration: scenario -> reason
	for _, shape := range []string{scenario.ShapeSingle, scenario.ShapeRedlock, scenario.ShapeEtcd} {
		row, skippedAll := "", "—"
		n := 0
		for k, d := range decls {
			command := []string{script}
			if d.goProg {
				command = []string{os.Args[0]}
			}
			size, skipped := meets(t, scenario.Program{Command: command, Shape: shape, Caps: d.caps})
			n = size
			row += fmt.Sprintf(" %d |", size-len(skipped))
			if k == 0 && len(skipped) > 0 {
				var names []string
				for name := range skipped {
					names = append(names, "`"+name+"`")
				}
				slices.Sort(names)
				skippedAll = strings.Join(names, ", ")
			}
			if skips[k] == nil {
				skips[k] = map[string]string{}
			}
			for name, why := range skipped {
				skips[k][name] = strings.ReplaceAll(why, os.Args[0][strings.LastIndexByte(os.Args[0], '/')+1:], "the program")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %d |%s %s |\n", shape, n, row, skippedAll)
	}
	seen := map[string]bool{}
	for k, d := range decls {
		var names []string
		for name := range skips[k] {
			if !seen[name] {
				names = append(names, name)
			}
		}
		if d.explain == "" || len(names) == 0 {
			continue
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "\n%s\n\n", d.explain)
		for _, name := range names {
			seen[name] = true
			fmt.Fprintf(&b, "- `%s`: %s.\n", name, skips[k][name])
		}
	}
	return b.String()
}
