package subject

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The worker protocol's page and the code agree: every request, reply and
// notice line of its examples decodes with no unknown field, and its tables
// of request, reply and notice fields name exactly the fields the code
// sends and reads, so a stranger implementing the protocol from the page alone sees
// what lockpick does.
func TestDocs_WorkerProtocolMatchesCode(t *testing.T) {
	data, err := os.ReadFile("../docs/worker-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	lines := 0
	for _, l := range strings.Split(page, "\n") {
		var into any
		switch {
		case strings.HasPrefix(l, "→ {"):
			into = new(extRequest)
		case strings.HasPrefix(l, "← {"):
			into = new(extLine) // a reply, or a notice
		default:
			continue
		}
		lines++
		js := strings.NewReplacer(",...}", "}", "[...]", "[]").Replace(l[strings.Index(l, "{"):])
		dec := json.NewDecoder(strings.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			t.Errorf("example line does not decode as the code's %T: %v\n%s", into, err, l)
		}
	}
	if lines < 6 {
		t.Errorf("found %d example lines, want at least 6", lines)
	}
	for _, tc := range []struct {
		section string
		typ     reflect.Type
	}{
		{"### Requests", reflect.TypeFor[extRequest]()},
		{"### Replies", reflect.TypeFor[extReply]()},
		{"#### Notices: a renewing lock", reflect.TypeFor[extRenewed]()}, // extLost's fields are among them
	} {
		doc, code := tableFields(page, tc.section), jsonFields(tc.typ)
		if !slices.Equal(doc, code) {
			t.Errorf("%s table names %v; the code's %s has %v", tc.section, doc, tc.typ.Name(), code)
		}
	}
}

var fieldCell = regexp.MustCompile("`([a-z_]+)`")

// tableFields returns the field names in the first column of the table
// under the heading, sorted.
func tableFields(page, heading string) []string {
	_, rest, _ := strings.Cut(page, "\n"+heading+"\n")
	var names []string
	inTable := false
	for _, l := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		first := strings.Split(l, "|")[1]
		for _, m := range fieldCell.FindAllStringSubmatch(first, -1) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// jsonFields returns the JSON names of t's fields, sorted.
func jsonFields(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
