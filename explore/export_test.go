package explore

import "github.com/lockpick/lockpick/scenario"

// Decide and Open expose the K-of-N decision to the black-box tests.
var (
	Decide = decide
	Open   = open
)

// Changes lists the shrink changes to try on s, in the order they are tried.
func Changes(s scenario.Scenario) []string {
	var out []string
	for _, c := range candidates(s) {
		out = append(out, c.change)
	}
	return out
}

// WriteReport exposes report.html's rendering to the black-box tests.
var WriteReport = writeReport

// StepBacks lists what the measurement steps back to, in order, from the
// last scenario of chain, skipping the scenarios refused says so of.
func StepBacks(chain []scenario.Scenario, refused func(scenario.Scenario) bool) []scenario.Scenario {
	b := &stepBack{chain: chain, at: len(chain) - 1, skip: refused}
	var out []scenario.Scenario
	for b.more() {
		out = append(out, b.next())
	}
	return out
}
