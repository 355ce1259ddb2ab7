package scenario_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

// TestREADME_NamesExist: every scenario and scenario:arm that the
// catalogue and seed-claims tables of docs/catalogue.md (moved there from
// the README) name is a built-in scenario (with that arm), so the tables
// cannot drift from the catalogue unnoticed; and every built-in scenario
// appears in the catalogue table.
func TestREADME_NamesExist(t *testing.T) {
	b, err := os.ReadFile("../docs/catalogue.md")
	if err != nil {
		t.Skipf("no docs/catalogue.md beside the package: %v", err)
	}
	text := string(b)
	claims := section(t, text, "## What the seed articles claim")
	catalogue := section(t, text, "## The scenario catalogue")
	name := regexp.MustCompile("`([a-z0-9-]+)(?::([a-z0-9-]+))?`")
	checked := 0
	for _, tbl := range []string{claims, catalogue} {
		for _, line := range strings.Split(tbl, "\n") {
			cells := strings.Split(line, "|")
			if len(cells) < 4 || !strings.Contains(line, "`") {
				continue
			}
			// The scenario column: the 5th cell of a claims row, the 2nd of a catalogue row.
			col := cells[1]
			if tbl == claims {
				col = cells[4]
			}
			for _, m := range name.FindAllStringSubmatch(col, -1) {
				s, err := scenario.Lookup(m[1])
				if err != nil {
					t.Errorf("docs/catalogue.md names %q: %v", m[0], err)
					continue
				}
				if m[2] != "" && !slices.Contains(s.ArmNames(), m[2]) {
					t.Errorf("docs/catalogue.md names arm %q of %s, which has arms %v", m[2], m[1], s.ArmNames())
				}
				checked++
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d names checked: the tables' layout changed?", checked)
	}
	for _, s := range scenario.All() {
		if !strings.Contains(catalogue, "`"+s.Name+"`") {
			t.Errorf("scenario %s is not in the catalogue table of docs/catalogue.md", s.Name)
		}
	}
}

// section returns text from the heading to the next heading of the same
// or a higher level.
func section(t *testing.T, text, heading string) string {
	t.Helper()
	i := strings.Index(text, heading)
	if i < 0 {
		t.Fatalf("docs/catalogue.md has no %q", heading)
	}
	level := strings.Index(heading, " ")
	rest := text[i+len(heading):]
	for _, h := range []string{"\n" + strings.Repeat("#", level) + " ", "\n" + strings.Repeat("#", max(level-1, 1)) + " "} {
		if j := strings.Index(rest, h); j >= 0 {
			rest = rest[:j]
		}
	}
	return rest
}
