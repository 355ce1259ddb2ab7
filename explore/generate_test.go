package explore_test

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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
		{"single-baseline", "peer-partition", "needs an etcd topology"},
		{"single-baseline", "teleport", "unknown fault"},
	} {
		_, err := explore.NewGenerator(lookup(t, c.scenario), []string{c.kind})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %s: err = %v, want it to say %q", c.scenario, c.kind, err, c.want)
		}
	}
}

// On an etcd topology the generator draws only the faults that act on an
// etcd member or a client's link to one, names members e1..eN (never a
// Redis node n1..), aims at @leader and @follower (never at a Redis aim),
// cuts clients off their own links e<i>-c<p>, and every schedule validates.
func TestGenerator_EtcdSchedulesOnMembers(t *testing.T) {
	for _, c := range []struct {
		scenario string
		kinds    []string // the vocabulary every fault that fits must give
	}{
		{"etcd-baseline", []string{"drop-replies", "kill", "latency", "partition", "pause", "peer-partition", "power-loss", "reset", "restart"}},
		{"etcd-pause-holder", []string{"drop-replies", "kill", "latency", "partition", "pause", "pause-client", "peer-partition", "power-loss", "reset", "restart"}},
	} {
		base := lookup(t, c.scenario)
		g, err := explore.NewGenerator(base, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.scenario, err)
		}
		if !reflect.DeepEqual(g.Kinds(), c.kinds) {
			t.Errorf("%s: vocabulary %v, want %v", c.scenario, g.Kinds(), c.kinds)
		}
		seen := map[string]bool{}
		for i := range 200 {
			sc := g.Schedule(1, i)
			if err := sc.Apply(base).Validate(); err != nil {
				t.Fatalf("%s: schedule %d (%s) is not a valid scenario: %v", c.scenario, i, sc.Describe(), err)
			}
			wiped := map[scenario.Duration]int{} // wiped restarts of one group, by time
			for _, f := range sc.Faults {
				seen[f.Fault] = true
				if f.Fault == "restart" && f.Params["wipe"] == true {
					seen["wipe"] = true
					if wiped[f.At]++; wiped[f.At] > 1 {
						t.Fatalf("%s: schedule %d (%s) wipes 2 of 3 members at once: the last cannot replace them without a quorum", c.scenario, i, sc.Describe())
					}
				}
				if what, ok := etcdTarget(f); ok {
					seen[what] = true
				} else {
					t.Fatalf("%s: schedule %d aims %s at %q, not an etcd member, a client's link to one, a resource path or an etcd aim", c.scenario, i, f.Fault, f.Node)
				}
			}
		}
		for _, want := range append(slices.Clone(c.kinds), "member", "@leader", "@follower", "client link", "resource", "wipe") {
			if !seen[want] {
				t.Errorf("%s: 200 schedules never drew %s", c.scenario, want)
			}
		}
	}
}

// etcdTarget classifies the target of a fault drawn on an etcd topology:
// "member" (e1..), "client link" (e1-c2..), "resource" (r1.., the holder's),
// an etcd aim (@leader, @follower), "client" (pause-client); false for any
// other, a Redis node or aim among them.
func etcdTarget(f scenario.Step) (string, bool) {
	n := f.Node
	switch {
	case f.Fault == "pause-client":
		return "client", n == "" || n == scenario.AimHolder
	case n == scenario.AimLeader, n == scenario.AimFollower:
		return n, true
	case n == scenario.AimHolderResource:
		return "resource", true
	case regexp.MustCompile(`^e[1-3]-c[1-9]$`).MatchString(n):
		return "client link", true
	case regexp.MustCompile(`^e[1-3]$`).MatchString(n):
		return "member", true
	case regexp.MustCompile(`^r[1-9]$`).MatchString(n):
		return "resource", true
	}
	return "", false
}

// The faults that cannot act on an etcd member are refused by name, each
// with why: the clock shim cannot reach etcd (a Go program), and the Redis
// faults need Redis replicas, sentinels or a Redis Cluster.
func TestNewGenerator_EtcdRefusesWhatCannotActOnAMember(t *testing.T) {
	for _, c := range []struct{ kind, want string }{
		{"clock-jump", "etcd is a Go program, which bypasses libc and so the clock shim"},
		{"clock-rate", "etcd is a Go program, which bypasses libc and so the clock shim"},
		{"cut-replication", "needs a topology with replicas"},
		{"promote", "needs a topology with replicas"},
		{"sentinel-failover", "needs sentinels"},
		{"cluster-failover", "needs a Redis Cluster"},
		{"bus-partition", "needs a Redis Cluster"},
		{"pause-client", "no client is isolated"},
	} {
		_, err := explore.NewGenerator(lookup(t, "etcd-baseline"), []string{"kill", c.kind})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "etcd members e1..e3") {
			t.Errorf("etcd-baseline with %s: err = %v, want it to name the members and say %q", c.kind, err, c.want)
		}
	}
}

// A power loss acts on a member (through its lazy disk): etcd-baseline
// takes it.
func TestNewGenerator_EtcdTakesPowerLoss(t *testing.T) {
	if _, err := explore.NewGenerator(lookup(t, "etcd-baseline"), []string{"kill", "power-loss"}); err != nil {
		t.Fatalf("etcd-baseline with power-loss: %v", err)
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

// A schedule's trial lasts until its faults have healed and a lease they
// touched has run out: on single-baseline (TTL 2s, 2s trial) a holder
// paused 1.2s in for 3s wakes inside the trial, 2s before its end.
func TestSchedule_ApplyLastsUntilTheFaultsSettle(t *testing.T) {
	base := lookup(t, "single-baseline")
	ttl := base.Lock.TTL.D()
	sc := explore.Schedule{Hold: base.Hold, Faults: []scenario.Step{
		{At: scenario.Duration(1200 * time.Millisecond), Fault: "pause", Node: "n1", For: scenario.Duration(3 * time.Second)},
		{At: scenario.Duration(300 * time.Millisecond), Fault: "restart", Node: "n1", Params: map[string]any{"delay": "4s"}},
	}}
	if got, want := sc.Apply(base).Duration.D(), 300*time.Millisecond+4*time.Second+ttl; got != want {
		t.Errorf("duration %v, want %v (the restart's delay, then a TTL)", got, want)
	}
	if got := (explore.Schedule{Hold: base.Hold}).Apply(base).Duration; got != base.Duration {
		t.Errorf("no faults: duration %v, want the scenario's %v", got, base.Duration)
	}
}

// On ZooKeeper and PostgreSQL topologies the generator draws on members
// z1..zN (aimed at @leader and @follower too) and nodes p1..pN (by name:
// a promote names the standby p2), cuts clients off their own links, never
// wipes a PostgreSQL node, and every schedule validates.
func TestGenerator_ZooKeeperAndPostgresSchedules(t *testing.T) {
	for _, c := range []struct {
		scenario string
		kinds    []string
		want     []string // targets 300 schedules must draw
		target   *regexp.Regexp
	}{
		{"zk-pause-holder", []string{"clock-jump", "drop-replies", "kill", "latency", "partition", "pause", "pause-client", "power-loss", "reset", "restart"},
			[]string{"@leader", "@follower", "z2", "z1-c2", "wipe"}, regexp.MustCompile(`^(z[1-3](-c[12])?|r[12]|@leader|@follower|@holder|@holder-resource|)$`)},
		{"pg-failover", []string{"clock-jump", "drop-replies", "kill", "latency", "partition", "pause", "power-loss", "promote", "reset", "restart"},
			[]string{"p1", "p2", "p1-c1", "promote p2"}, regexp.MustCompile(`^(p[12](-c[12])?|r[12]|@holder-resource)$`)},
	} {
		base := lookup(t, c.scenario)
		g, err := explore.NewGenerator(base, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.scenario, err)
		}
		if !reflect.DeepEqual(g.Kinds(), c.kinds) {
			t.Errorf("%s: vocabulary %v, want %v", c.scenario, g.Kinds(), c.kinds)
		}
		seen := map[string]bool{}
		for i := range 300 {
			sc := g.Schedule(1, i)
			if err := sc.Apply(base).Validate(); err != nil {
				t.Fatalf("%s: schedule %d (%s) is not a valid scenario: %v", c.scenario, i, sc.Describe(), err)
			}
			for _, f := range sc.Faults {
				if !c.target.MatchString(f.Node) {
					t.Fatalf("%s: schedule %d aims %s at %q", c.scenario, i, f.Fault, f.Node)
				}
				seen[f.Node], seen[f.Fault+" "+f.Node] = true, true
				if f.Params["wipe"] == true {
					seen["wipe"] = true
				}
			}
		}
		for _, want := range c.want {
			if !seen[want] {
				t.Errorf("%s: 300 schedules never drew %s", c.scenario, want)
			}
		}
	}
}
