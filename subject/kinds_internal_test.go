package subject

import (
	"slices"
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

// TestRegister_BuiltinKinds: the lock kinds package scenario knows without
// registration are exactly the subjects this package registers, so a
// scenario that validates always finds its lock.
func TestRegister_BuiltinKinds(t *testing.T) {
	subjectsMu.RLock()
	var got []string
	for k := range subjects {
		got = append(got, k)
	}
	subjectsMu.RUnlock()
	slices.Sort(got)
	if want := scenario.LockKinds(); !slices.Equal(got, want) {
		t.Errorf("registered subjects %q, want the kinds scenario knows, %q", got, want)
	}
}
