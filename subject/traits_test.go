package subject_test

import (
	"testing"

	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// TestTraits_EveryBuiltinKind: every lock kind scenario knows has traits,
// registered beside its subject's code, and a subject to build.
func TestTraits_EveryBuiltinKind(t *testing.T) {
	for _, kind := range scenario.LockKinds() {
		if _, ok := scenario.TraitsOf(kind); !ok {
			t.Errorf("lock kind %s has no traits", kind)
		}
		if !subject.Registered(kind) {
			t.Errorf("lock kind %s has no subject", kind)
		}
	}
}
