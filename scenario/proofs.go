package scenario

import (
	"slices"
	"strings"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
)

// unknownWords are lockpick's words for an operation whose outcome is
// unknown (it may have taken effect): a requirement on them is about an
// unknown outcome, which a lock program reports as such (unknown: true).
var unknownWords = []string{"outcome unknown", "i/o timeout"}

// lockOps are the operations of the lock itself, whose error texts are
// the lock's own words; a read or a write is refused by lockpick's
// resource, in its words, whatever the lock.
var lockOps = []string{checker.FAcquire, checker.FRelease, checker.FExtend}

// proofsFor returns s's requirements restated for a subject other than
// its own lock, which runs without the settings dropped. One rule: a
// requirement in the words of s's lock (an acquire, release or extend
// refused with an error text: "deadline exceeded", "0 of 3 nodes
// granted") is
//
//   - dropped if the subject runs without some of the lock's settings
//     (other than a mere time bound, such as node_timeout): the text then
//     says what those settings made the lock do (WAIT's "acknowledged by
//     enough replicas", a sequential Redlock's split votes);
//   - otherwise restated as what happened, without the text: the
//     operation failed or ended unknown (only ended unknown, where the text
//     is lockpick's for an unknown outcome: "i/o timeout", "outcome
//     unknown"), once the attack began (after the schedule's first fault,
//     unless it names its own moment).
//
// A waited requirement is about the lock's own waiting, and goes with
// acquire: block when that is dropped.
func (s Scenario) proofsFor(dropped []string) []evidence.Requirement {
	changed := slices.ContainsFunc(dropped, func(set string) bool { return !settingRules[set].bound })
	var out []evidence.Requirement
	for _, r := range s.Require {
		switch {
		case r.Waited != "" && slices.Contains(dropped, "acquire"):
			continue
		case r.Error == "" || !slices.Contains(lockOps, r.Refused):
		case changed:
			continue
		default:
			r.Unknown = r.Unknown || slices.ContainsFunc(unknownWords, func(w string) bool { return strings.Contains(r.Error, w) })
			r.Error = ""
			if r.After == "" && len(s.Faults) > 0 {
				r.After = s.Faults[0].Fault
			}
		}
		out = append(out, r)
	}
	return out
}
