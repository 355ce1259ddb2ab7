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

// builtinTraits are the traits of the subjects built into lockpick.
//
// TODO(lead): move each line beside its subject's code in subject/*.go, as
// a scenario.RegisterTraits call next to its subject.Register.
var builtinTraits = map[string]Traits{
	"set-nx":       {ShapeSingle, []string{"wait_replicas", "wait_timeout", "fenced", "clock_skew", "acquire"}},
	"reentrant":    {ShapeSingle, []string{"fenced", "no_watchdog", "clock_skew", "acquire", "reenter", "stop_renewing_on_error", "count_every_acquire"}},
	"setnx-expire": {ShapeSingle, []string{"crash_after_setnx", "pause_after_setnx", "clock_skew", "acquire"}},
	"getset":       {ShapeSingle, []string{"clock_skew", "acquire", "naive_recovery", "recovery_pause"}},
	"redlock": {ShapeRedlock, []string{"node_timeout", "release_acquired_only", "clock_skew", "acquire", "sequential", "greedy",
		"give_up_early", "rotate_order", "fixed_retry_delay", "drift_factor", "wait_all", "tries", "ignore_elapsed"}},
	"multilock":   {ShapeRedlock, []string{"no_watchdog", "clock_skew", "acquire", "rotate_order", "all_nodes"}},
	"redislock":   {ShapeSingle, nil},
	"redsync":     {ShapeRedlock, []string{"node_timeout"}},
	"external":    {"", []string{"fenced", "node_timeout"}}, // and what its program declares: see programTraits
	"etcd-mutex":  {ShapeEtcd, []string{"fenced", "acquire", "require_leader", "ignore_lost"}},
	"etcd-v3lock": {ShapeEtcd, []string{"acquire", "ignore_lost"}},
	"none":        {"", nil},
}

var (
	traitsMu sync.RWMutex
	traits   = func() map[string]Traits {
		m := map[string]Traits{}
		for k, t := range builtinTraits {
			m[k] = t
		}
		return m
	}()
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

// traitsOf returns the traits of kind, and false for a kind registered
// without any (only [Scenario.Validate] then checks it).
func traitsOf(kind string) (Traits, bool) {
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
