package scenarios

import (
	"sort"
	"strings"
)

// lockKinds lists the lock algorithms a scenario can name.
func lockKinds() string {
	var ks []string
	for k := range subjects {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func knownLock(kind string) bool { _, ok := subjects[kind]; return ok }
