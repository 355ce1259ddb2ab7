package scenario

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestLockSettings_EveryFieldClassified: every field of Lock is either
// taken by every subject (notSettings) or a setting with a class, so a new
// setting cannot be left out of what decides which subject meets which
// scenario; and every class names a field.
func TestLockSettings_EveryFieldClassified(t *testing.T) {
	t.Parallel()
	fields := map[string]bool{"fenced": true} // the scenario's, not the lock's
	lt := reflect.TypeFor[Lock]()
	for i := range lt.NumField() {
		name, _, _ := strings.Cut(lt.Field(i).Tag.Get("yaml"), ",")
		fields[name] = true
		_, classified := settingRules[name]
		if classified == slices.Contains(notSettings, name) {
			t.Errorf("Lock.%s (%s): want it in exactly one of settingRules (own, attack or capability) and notSettings", lt.Field(i).Name, name)
		}
	}
	for name, r := range settingRules {
		if !fields[name] {
			t.Errorf("settingRules classifies %q, which is no field of Lock", name)
		}
		switch {
		case r.class == ownSetting && r.of == "":
			t.Errorf("own setting %s: say whose lock it configures (of)", name)
		case r.class == attackSetting && r.attack == "":
			t.Errorf("attack setting %s: say what the attack is (attack)", name)
		}
	}
	if got, want := len(lockSettings()), len(settingRules)-1; got != want {
		t.Errorf("%d lock settings found by reflection, want %d (settingRules less fenced)", got, want)
	}
}

// TestTraits_HonourKnownSettings: a subject's traits must name settings
// that exist (package subject's test checks every built-in kind has them).
func TestTraits_HonourKnownSettings(t *testing.T) {
	t.Parallel()
	for _, set := range ExternalTraits.Honours {
		if _, ok := settingRules[set]; !ok {
			t.Errorf("external honours %q, which is no lock setting", set)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("RegisterTraits took a setting that does not exist")
		}
	}()
	RegisterTraits("test-no-such-setting", Traits{Honours: []string{"tll"}})
}

// TestScenario_Drop: every setting a scenario uses can be dropped, and is
// then no longer used.
func TestScenario_Drop(t *testing.T) {
	t.Parallel()
	s := Scenario{Fenced: true, Lock: Lock{Kind: "redlock", Acquire: AcquireBlock, Wait: Duration(1), Sequential: true,
		ClockSkew: []Duration{0, 1}, DriftFactor: 0.1, Reenter: 2, IgnoreLost: true}}
	set := s.settings()
	if want := []string{"fenced", "acquire", "sequential", "drift_factor", "reenter", "clock_skew", "ignore_lost"}; !slices.Equal(set, want) {
		t.Fatalf("settings %v, want %v", set, want)
	}
	for _, name := range set[1:] {
		s.drop(name)
	}
	if got := s.settings(); !slices.Equal(got, []string{"fenced"}) || s.Lock.Wait != 0 || s.Lock.Kind != "redlock" {
		t.Errorf("after dropping all but fenced: settings %v, wait %v, kind %s", got, s.Lock.Wait, s.Lock.Kind)
	}
}
