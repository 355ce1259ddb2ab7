package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// The settings of a scenario's lock are the fields of [Lock] beyond those
// every subject takes (notSettings), and the scenario's fenced. For a
// subject that does not honour one (see [Traits]) a setting is of one of
// three classes:
//
//   - own: it configures lockpick's own lock only (Redlock's sequential,
//     the reentrant lock's stop_renewing_on_error). The attack is the
//     topology, the clients and the faults, not how lockpick's lock is
//     built, so another subject runs the scenario without the setting, and
//     the scenario says so ([Scenario].Dropped).
//   - attack: it is the attack (crash_after_setnx: a crash between two
//     commands of the legacy lock). A subject that does not honour it
//     cannot meet the scenario, and the reason says what the attack is.
//   - capability: it asks for something a lock does, which a lock program
//     declares (acquire: block, fenced; see [Program]).
//
// Every field of Lock is classified in settingRules or listed in
// notSettings: [lockSettings] panics on one that is neither, so a new
// setting cannot be forgotten.

// A settingClass says what a setting is to a subject that does not honour it.
type settingClass int

const (
	ownSetting        settingClass = iota // configures lockpick's own lock: dropped
	attackSetting                         // is the attack: the subject does not fit
	capabilitySetting                     // asks for something the lock does
)

// A settingRule classifies one lock setting.
type settingRule struct {
	class settingClass
	// of names the lock whose setting an own setting is.
	of string
	// attack says, for an attack setting, what the attack is and why a
	// lock that does not honour it cannot meet it.
	attack string
	// renewal marks a setting of the lock's lease renewal: the scenario's
	// attack meets a lock that renews its lease.
	renewal bool
	// bound marks an own setting that only bounds a time (a request to one
	// node): without it the lock does the same, in its own time.
	bound bool
}

const (
	ofRedlock   = "lockpick's redlock"
	ofReentrant = "lockpick's reentrant lock"
)

// settingRules classifies every lock setting, by the name a scenario file
// gives it.
var settingRules = map[string]settingRule{
	"fenced":                 {class: capabilitySetting},
	"acquire":                {class: capabilitySetting},
	"wait_replicas":          {of: "lockpick's set-nx"},
	"wait_timeout":           {of: "lockpick's set-nx", bound: true},
	"node_timeout":           {of: ofRedlock, bound: true},
	"release_acquired_only":  {of: ofRedlock},
	"sequential":             {of: ofRedlock},
	"greedy":                 {of: ofRedlock},
	"give_up_early":          {of: ofRedlock},
	"fixed_retry_delay":      {of: ofRedlock},
	"drift_factor":           {of: ofRedlock, bound: true},
	"wait_all":               {of: ofRedlock},
	"tries":                  {of: ofRedlock},
	"ignore_elapsed":         {of: ofRedlock},
	"rotate_order":           {of: "lockpick's redlock and multilock"},
	"all_nodes":              {of: "lockpick's multilock"},
	"require_leader":         {of: "lockpick's etcd-mutex"},
	"ignore_lost":            {of: "lockpick's etcd and ZooKeeper locks"},
	"recovery_pause":         {of: "lockpick's getset lock"},
	"reenter":                {of: ofReentrant},
	"count_every_acquire":    {of: ofReentrant},
	"no_watchdog":            {of: "lockpick's reentrant lock and multilock"},
	"stop_renewing_on_error": {of: ofReentrant, renewal: true},
	"clock_skew":             {class: attackSetting, attack: "the attack is a skewed client clock"},
	"crash_after_setnx": {class: attackSetting, attack: "the attack is a client that dies between SETNX and EXPIRE, " +
		"the two commands of the legacy setnx-expire lock's acquire; a lock that sets its key and its TTL in one command has no such moment"},
	"pause_after_setnx": {class: attackSetting, attack: "the attack is a server crash while the legacy setnx-expire lock waits between " +
		"SETNX and EXPIRE, which leaves a key without a TTL; a lock that sets its key and its TTL in one command has no such moment"},
	"naive_recovery": {class: attackSetting, attack: "the attack is the getset lock's own mistake, taking an expired lock over " +
		"with DEL then SETNX, which two contenders race; without it the scenario is getset-race"},
	"constant_token": {class: attackSetting, attack: "the attack is a lock that hands every holder the same value (SET lock 1 NX PX), " +
		"so its compare-and-delete release frees another holder's lock; a lock with a value of its own per grant has no such mistake"},
	"check_before_del": {of: "lockpick's getset lock"},
	"del_pause": {class: attackSetting, attack: "the attack is a slow client between the getset lock's expiry check and its DEL, " +
		"two steps of its release; a lock whose release checks and deletes in one command has no such moment"},
}

// notSettings are the fields of [Lock] every subject takes: what the lock
// is and its lease, not a setting of lockpick's lock. wait bounds acquire:
// block and goes with it.
var notSettings = []string{"kind", "command", "caps", "key", "ttl", "retry_delay", "wait"}

// A lockSetting is a field of [Lock] that is a setting.
type lockSetting struct {
	name  string // as a file writes it
	index []int
}

// lockSettings finds the settings among [Lock]'s fields, in their order,
// once, by reflection. It panics on a field that is neither classified in
// settingRules nor listed in notSettings.
var lockSettings = sync.OnceValue(func() []lockSetting {
	var out []lockSetting
	t := reflect.TypeFor[Lock]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if slices.Contains(notSettings, name) {
			continue
		}
		if _, ok := settingRules[name]; !ok {
			panic(fmt.Sprintf("scenario: lock setting %q (Lock.%s) has no class in settingRules: own, attack or capability?", name, f.Name))
		}
		out = append(out, lockSetting{name: name, index: f.Index})
	}
	return out
})

// settings lists the lock settings s uses: fenced, then the non-zero
// settings of its lock in [Lock]'s order (acquire only when it blocks).
func (s Scenario) settings() []string {
	var set []string
	if s.Fenced {
		set = append(set, "fenced")
	}
	v := reflect.ValueOf(s.Lock)
	for _, f := range lockSettings() {
		on := !v.FieldByIndex(f.index).IsZero()
		if f.name == "acquire" {
			on = s.Lock.Acquire == AcquireBlock
		}
		if on {
			set = append(set, f.name)
		}
	}
	return set
}

// drop zeroes the lock setting name of s (acquire: block takes its wait
// with it).
func (s *Scenario) drop(name string) {
	if name == "acquire" {
		s.Lock.Acquire, s.Lock.Wait = "", 0
		return
	}
	for _, f := range lockSettings() {
		if f.name == name {
			reflect.ValueOf(&s.Lock).Elem().FieldByIndex(f.index).SetZero()
		}
	}
}

// renewal says why s attacks a lock that renews its lease, or "" if it
// does not: its holders keep the lock longer than the lease, so only a
// renewed lease outlives a hold, or its lock's renewal is set up for the
// attack (stop_renewing_on_error).
func (s Scenario) renewal() string {
	if s.Hold > s.Lock.TTL {
		return fmt.Sprintf("its holders keep the lock %v, longer than the %v lease", s.Hold.D(), s.Lock.TTL.D())
	}
	for _, set := range s.settings() {
		if r := settingRules[set]; r.renewal {
			return fmt.Sprintf("its attack meets the lease renewal of %s (%s)", r.of, set)
		}
	}
	return ""
}
