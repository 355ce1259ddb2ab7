package scenario_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lockpick/lockpick/scenario"
)

// yamlBlock is a fenced YAML block of a Markdown page.
var yamlBlock = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")

// Every YAML block of the docs that a user may copy into a scenario file
// is accepted by lockpick: a whole scenario (name and expect) loads and
// validates; a fragment decodes with no unknown field, its faults build
// with their parameters and its requirements are well formed. The docs
// cannot drift from the code unnoticed.
func TestDocs_YAMLExamplesAreAccepted(t *testing.T) {
	pages, _ := filepath.Glob("../docs/*.md")
	n := 0
	for _, page := range append(pages, "../README.md") {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range yamlBlock.FindAllSubmatch(data, -1) {
			block := m[1]
			if bytes.HasPrefix(block, []byte("# .github/")) || bytes.HasPrefix(block, []byte("# a matrix file")) {
				continue // a CI workflow or a matrix (campaign's tests read it), not a scenario
			}
			n++
			where := fmt.Sprintf("%s, YAML block %d", filepath.Base(page), i+1)
			if bytes.HasPrefix(bytes.TrimSpace(block), []byte("- ")) {
				block = append([]byte("arms:\n"), block...) // a list of arms, as in a scenario
			}
			checkDocBlock(t, where, block)
		}
	}
	if n < 10 {
		t.Errorf("found %d YAML blocks in the docs, want at least 10: the pattern is wrong", n)
	}
}

func checkDocBlock(t *testing.T, where string, block []byte) {
	t.Helper()
	var s scenario.Scenario
	dec := yaml.NewDecoder(bytes.NewReader(block))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		t.Errorf("%s does not decode as (part of) a scenario: %v\n%s", where, err, block)
		return
	}
	if s.Name != "" && s.Expect != "" {
		if _, err := scenario.Parse(where+".yaml", block); err != nil {
			t.Errorf("%s: a whole scenario that lockpick refuses: %v", where, err)
		}
		return
	}
	for _, st := range s.Faults { // an arm's faults were checked for unknown fields as it decoded
		if _, err := st.NewFault(nil); err != nil {
			t.Errorf("%s: fault %s: %v", where, st.Fault, err)
		}
	}
	for _, r := range s.Require {
		if field, msg := r.Validate(); msg != "" {
			t.Errorf("%s: requirement %s: %s", where, field, msg)
		}
	}
}
