package explore

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
)

// write fills the explore folder: explore.json, and per finding its
// minimal and original scenarios and the original trial's history, then
// report.html.
func write(dir *results.RunDir, base scenario.Scenario, res *Result) error {
	if err := dir.WriteJSON("explore.json", res); err != nil {
		return err
	}
	for _, fd := range append(slices.Clone(res.Findings), res.Flaky...) {
		stem := strings.TrimSuffix(fd.File, ".yaml")
		header := fmt.Sprintf("# Found by lockpick explore %s --seed %d (schedule %d); shrunk from %d faults to %d in %d replays.\n"+
			"# Reproduced in %s replays (%s/). Replay it: lockpick run --file %s --trials %d\n",
			base.Name, res.Seed, fd.Original.Index, len(fd.Original.Faults), len(fd.Minimal), fd.Shrunk.Replays,
			fd.Rate(), fd.ReplayDir, fd.File, fd.Measured)
		if !fd.Shrunk.Confirmed {
			header = fmt.Sprintf("# Seen once by lockpick explore %s --seed %d (schedule %d), and not reproduced %d of %d times:\n"+
				"# a flaky finding, not shrunk. Its history is %s-original-history.jsonl.\n",
				base.Name, res.Seed, fd.Original.Index, fd.Shrunk.K, fd.Shrunk.N, stem)
		}
		if err := WriteScenario(dir.Path(fd.File), fd.minimal, header); err != nil {
			return err
		}
		orig := fd.Original.Apply(base)
		orig.Expect, orig.Name = scenario.Unsafe, fd.minimal.Name+"-original"
		orig.Summary = "the schedule lockpick explore drew, before shrinking: " + fd.Original.Describe()
		if err := WriteScenario(dir.Path(stem+"-original.yaml"), orig, "# The schedule as the search drew it; "+fd.File+" is its shrunk form.\n"); err != nil {
			return err
		}
		if err := checker.WriteFile(dir.Path(stem+"-original-history.jsonl"), fd.originalTrial.History); err != nil {
			return err
		}
	}
	return writeReport(dir.Path("report.html"), base, res)
}

// WriteScenario writes s as a scenario file that `lockpick run --file`
// reads back, leaving out the fields at their zero value, after header (a
// comment block).
func WriteScenario(path string, s scenario.Scenario, header string) error {
	b, err := MarshalScenario(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(header), b...), 0o644)
}

// MarshalScenario returns s as YAML without its zero fields.
func MarshalScenario(s scenario.Scenario) ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(s); err != nil {
		return nil, err
	}
	prune(&n)
	flowSteps(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// prune removes the mapping entries whose value is empty or zero; it
// reports whether n itself is empty.
func prune(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.MappingNode:
		var keep []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "grants" || !prune(n.Content[i+1]) { // grants: 0 means something
				keep = append(keep, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = keep
		return len(keep) == 0
	case yaml.SequenceNode:
		for _, c := range n.Content {
			prune(c)
		}
		return len(n.Content) == 0
	case yaml.ScalarNode:
		switch n.Value {
		case "", "0", "0s", "false", "null":
			return true
		}
	}
	return false
}

// flowSteps writes each fault and requirement on one line, as the
// catalogue does.
func flowSteps(n *yaml.Node) {
	if n.Kind == yaml.DocumentNode {
		n = n.Content[0]
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "faults", "require":
			for _, c := range n.Content[i+1].Content {
				c.Style = yaml.FlowStyle
			}
		case "topology", "lock":
			n.Content[i+1].Style = yaml.FlowStyle
		}
	}
}
