package scenario

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Traits say which scenarios a subject can be put through: the shape of
// its lock and the settings of a scenario's lock it acts on. A setting it
// does not honour is dropped, or keeps the subject out of the scenario
// when it is the attack (see [Scenario.WithSubject]).
type Traits struct {
	// Shape is the deployment the lock is written for: ShapeSingle,
	// ShapeRedlock or ShapeEtcd; "" for any (the subject decides).
	Shape string
	// Honours lists the lock settings the subject acts on, as a scenario
	// file writes them ("wait_replicas", "fenced", "acquire", ...).
	Honours []string
}

// ExternalTraits are the traits of a lock program (kind external) before
// it declares anything: any shape, and the settings every program is sent.
// What it declares adds to them (see [Program]).
var ExternalTraits = Traits{Honours: []string{"fenced", "node_timeout"}}

// The traits of every subject kind, registered beside each subject's code
// (package subject) with [RegisterTraits]; external's are known here too,
// since a program's traits are made from its declaration.
var (
	traitsMu sync.RWMutex
	traits   = map[string]Traits{"external": ExternalTraits}
)

// RegisterTraits declares the traits of a subject kind, which becomes
// known to [Scenario.Validate] as with [RegisterLockKind]; registering a
// kind again replaces its traits. It panics on a shape or a setting
// lockpick does not know: a programming error.
func RegisterTraits(kind string, t Traits) {
	if _, ok := shapes[t.Shape]; !ok {
		panic(fmt.Sprintf("scenario: traits of %s: unknown shape %q", kind, t.Shape))
	}
	for _, set := range t.Honours {
		if _, ok := settingRules[set]; !ok {
			panic(fmt.Sprintf("scenario: traits of %s: unknown lock setting %q", kind, set))
		}
	}
	traitsMu.Lock()
	traits[kind] = Traits{Shape: t.Shape, Honours: slices.Clone(t.Honours)}
	traitsMu.Unlock()
	RegisterLockKind(kind)
}

// TraitsOf returns the traits of kind, and false for a kind registered
// without any (only [Scenario.Validate] then checks it).
func TraitsOf(kind string) (Traits, bool) {
	traitsMu.RLock()
	defer traitsMu.RUnlock()
	t, ok := traits[kind]
	return t, ok
}

// honours reports whether t honours the setting.
func (t Traits) honours(setting string) bool { return slices.Contains(t.Honours, setting) }

// honouredBy lists the subjects that honour a lock setting, for a message.
func honouredBy(setting string) string {
	traitsMu.RLock()
	var kinds []string
	for k, t := range traits {
		if t.honours(setting) {
			kinds = append(kinds, k)
		}
	}
	traitsMu.RUnlock()
	slices.Sort(kinds)
	return strings.Join(kinds, " and ")
}
