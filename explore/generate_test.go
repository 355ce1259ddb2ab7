package explore_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/explore"
	"github.com/lockpick/lockpick/scenario"
)

func lookup(t *testing.T, name string) scenario.Scenario {
	t.Helper()
	s, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGenerator_SameSeedSameSchedule(t *testing.T) {
	g, err := explore.NewGenerator(lookup(t, "redlock-baseline"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		a, b := g.Schedule(7, i), g.Schedule(7, i)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("schedule %d differs for the same seed:\n%s\n%s", i, a.Describe(), b.Describe())
		}
	}
	if reflect.DeepEqual(g.Schedule(7, 3), g.Schedule(8, 3)) {
		t.Error("seeds 7 and 8 drew the same schedule 3")
	}
}

// Every drawn schedule is a valid scenario, uses only the vocabulary, and
// over many draws the generator aims by state and hits groups of nodes.
func TestGenerator_ValidSchedulesFromTheVocabulary(t *testing.T) {
	for _, c := range []struct {
		scenario string
		kinds    []string
	}{
		{"redlock-baseline", nil},
		{"failover-lock-loss", nil},
		{"gc-pause-fenced", []string{"pause-client", "latency", "partition", "drop-replies"}},
		{"redlock-power-loss", []string{"power-loss", "restart", "partition"}},
	} {
		base := lookup(t, c.scenario)
		g, err := explore.NewGenerator(base, c.kinds)
		if err != nil {
			t.Fatalf("%s: %v", c.scenario, err)
		}
		seen := map[string]bool{}
		for i := range 300 {
			sc := g.Schedule(1, i)
			s := sc.Apply(base)
			if err := s.Validate(); err != nil {
				t.Fatalf("%s: schedule %d (%s) is not a valid scenario: %v", c.scenario, i, sc.Describe(), err)
			}
			if len(sc.Faults) == 0 {
				t.Fatalf("%s: schedule %d has no fault", c.scenario, i)
			}
			for _, f := range sc.Faults {
				seen[f.Fault] = true
				if strings.HasPrefix(f.Node, "@") {
					seen["aimed"] = true
				}
			}
			if sc.Hold <= 0 || sc.Hold.D() > base.Lock.TTL.D() {
				t.Fatalf("%s: hold %v outside (0, TTL]", c.scenario, sc.Hold.D())
			}
		}
		for _, k := range g.Kinds() {
			if !seen[k] {
				t.Errorf("%s: 300 schedules never drew %s", c.scenario, k)
			}
		}
		if !seen["aimed"] {
			t.Errorf("%s: no fault aimed by the system's state", c.scenario)
		}
		if c.kinds != nil && len(seen) > len(c.kinds)+1 {
			t.Errorf("%s: drew faults outside %v: %v", c.scenario, c.kinds, seen)
		}
	}
}

func TestNewGenerator_RejectsFaultsThatDoNotFit(t *testing.T) {
	for _, c := range []struct{ scenario, kind, want string }{
		{"redlock-baseline", "promote", "needs a topology with replicas"},
		{"cluster-failover-lock-loss", "promote", "refuses REPLICAOF"},
		{"redlock-baseline", "pause-client", "isolated"},
		{"single-baseline", "sentinel-failover", "needs sentinels"},
		{"single-baseline", "teleport", "unknown fault"},
	} {
		_, err := explore.NewGenerator(lookup(t, c.scenario), []string{c.kind})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %s: err = %v, want it to say %q", c.scenario, c.kind, err, c.want)
		}
	}
}

// A minimal scenario is written as a file that reads back the same.
func TestMarshalScenario_RoundTrip(t *testing.T) {
	base := lookup(t, "failover-lock-loss")
	g, _ := explore.NewGenerator(base, nil)
	s := g.Schedule(3, 5).Apply(base)
	s.Name = "round-trip"
	b, err := explore.MarshalScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := scenario.Parse("round-trip.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(normal(t, back), normal(t, s)) {
		t.Errorf("read back differs:\n%s", b)
	}
}

// normal marshals s, so maps decoded from YAML and built in Go compare equal.
func normal(t *testing.T, s scenario.Scenario) string {
	b, err := explore.MarshalScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
