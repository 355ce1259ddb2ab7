package scenario

import "github.com/lockpick/lockpick/judge"

// Rules returns what s says about judging its trials: its expectation and
// the anomaly kinds it tolerates.
func (s Scenario) Rules() judge.Rules {
	return judge.Rules{Expect: string(s.Expect), Tolerate: s.Tolerate}
}
