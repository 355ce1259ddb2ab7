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
// last scenario of chain, leaving out those refused says so of.
var StepBacks = stepBacks
