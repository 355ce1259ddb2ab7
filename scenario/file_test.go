package scenario_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

func TestParse_Errors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"unknown field", "name: x\nexpect: safe\nlokc: {kind: set-nx}\n", 3, "", `unknown field "lokc" in the scenario (did you mean "lock"?)`},
		{"bad expect", "name: x\nexpect: maybe\n", 2, "expect", "must be safe, unsafe, stuck, starves or conclusive"},
		{"bad lock", "name: x\nexpect: safe\nlock:\n  kind: spinlock\n", 4, "lock.kind", `unknown lock "spinlock"`},
		{"bad duration", "name: x\nexpect: safe\nhold: soon\n", 3, "hold", `must be a duration like 500ms or 2s, not "soon"`},
		{"bad fault", "name: x\nexpect: unsafe\nfaults:\n  - {at: 1s, fault: kill, node: n1}\n  - {at: 2s, fault: smash, node: n1}\n", 5, "faults[1].fault", `unknown fault "smash"`},
		{"misspelled fault", "name: x\nexpect: unsafe\nisolate: [1]\nfaults:\n  - {at: 1s, fault: pause-clinet, client: 1}\n", 5, "faults[0].fault", `unknown fault "pause-clinet" (did you mean "pause-client"?) (known: `},
		{"misspelled fault parameter", "name: x\nexpect: unsafe\nfaults:\n  - {at: 1s, fault: restart, node: n1, params: {dealy: 1s}}\n", 4, "faults[0].params.dealy", `unknown parameter "dealy" (did you mean "delay"?) (it takes: delay, wipe)`},
		{"bad node", "name: x\nexpect: unsafe\nfaults:\n  - {at: 1s, fault: kill, node: n9}\n", 4, "faults[0].node", `no node "n9"`},
		{"syntax", "name: x\nexpect: [safe\n", -1, "", ""},
		{"fault never fires", "name: x\nexpect: safe\nduration: 1s\nfaults:\n  - {at: 5s, fault: kill, node: n1}\n", 5, "faults[0].at", "never fire"},
		{"jitter past the end", "name: x\nexpect: safe\nduration: 1s\nfaults:\n  - {at: 800ms, jitter: 300ms, fault: kill, node: n1}\n", 5, "faults[0].at", "never fire"},
		{"misspelled arm field", "name: x\nexpect: safe\narms:\n  - name: a\n  - name: b\n    lock: {wait_replica: 1}\n", 6, "", `unknown field "wait_replica" in lock (did you mean "wait_replicas"?)`},
		{"misspelled arm section", "name: x\nexpect: safe\narms:\n  - name: a\n    topolgy: {masters: 3}\n", 5, "", `unknown field "topolgy" in the scenario (did you mean "topology"?)`},
		{"bad requirement", "name: x\nexpect: safe\nrequire:\n  - {grants: 1}\n  - {refused: lock, error: x}\n", 5, "require[1].refused", "must be acquire"},
		{"two requirements in one", "name: x\nexpect: safe\nrequire:\n  - {grants: 1, prevented: stale-write}\n", 4, "require[0]", "exactly one"},
		{"cluster fault off a cluster", "name: x\nexpect: unsafe\nfaults:\n  - {at: 1s, fault: bus-partition, node: n1}\n", 4, "faults[0].fault", "needs a Redis Cluster"},
		{"kill on a client link", "name: x\nexpect: unsafe\nclients: 2\nfaults:\n  - {at: 1s, fault: kill, node: n1-c2}\n", 5, "faults[0].node", "only partition, latency"},
		{"client link of no client", "name: x\nexpect: unsafe\nclients: 2\nfaults:\n  - {at: 1s, fault: partition, node: n1-c3}\n", 5, "faults[0].node", `no node "n1-c3"`},
		{"multilock on a cluster", "name: x\nexpect: safe\ntopology: {shards: 3}\nlock: {kind: multilock}\n", 4, "lock.kind", "key per shard"},
		{"sentinel failover without sentinels", "name: x\nexpect: unsafe\ntopology: {replicas: 1}\nfaults:\n  - {at: 1s, fault: sentinel-failover, node: \"@master\"}\n", 5, "faults[0].fault", "needs sentinels"},
		{"sentinel failover on an unwatched master", "name: x\nexpect: unsafe\ntopology: {masters: 2, replicas: 1, sentinels: 3}\nfaults:\n  - {at: 1s, fault: sentinel-failover, node: n2}\n", 5, "faults[0].fault", "sentinels watch n1 and its replicas"},
		{"kill on a resource path", "name: x\nexpect: unsafe\nfaults:\n  - {at: 1s, fault: kill, node: r1}\n", 4, "faults[0].fault", "Redis node's process"},
		{"cut replication without replicas", "name: x\nexpect: unsafe\nfaults:\n  - {at: 1s, fault: cut-replication, node: n1}\n", 4, "faults[0].fault", "needs a topology with replicas"},
		{"key on a resource path", "name: x\nexpect: unsafe\nrequire:\n  - {fault: partition, node: r1, key_before: held}\nfaults:\n  - {at: 1s, fault: partition, node: r1}\n", 4, "require[0].key_before", "holds no lock key"},
		{"key after a client fault", "name: x\nexpect: unsafe\nisolate: [1]\nrequire:\n  - {fault: kill-client, key_after: absent}\nfaults:\n  - {at: 1s, fault: kill-client, client: 1}\n", 5, "require[0].key_after", "only key_before"},
		{"aimed requirement names a node it cannot reach", "name: x\nexpect: unsafe\ntopology: {replicas: 1, sentinels: 3}\nrequire:\n  - {grants: 1, after: sentinel-failover n3}\nfaults:\n  - {at: 1s, fault: sentinel-failover, node: \"@master\"}\n", 5, "require[0]", `no fault "sentinel-failover n3"`},
		{"unknown moment", "name: x\nexpect: safe\nfaults:\n  - {at: 1s, when: {event: write, client: 1}, fault: kill, node: n1}\n", 4, "faults[0].when.event", "must be acquire, granted, read or released"},
		{"moment of no client", "name: x\nexpect: safe\nclients: 2\nfaults:\n  - {at: 1s, when: {event: acquire, client: 3}, fault: kill, node: n1}\n", 5, "faults[0].when.client", "no client 3"},
		{"negative delay after a moment", "name: x\nexpect: safe\nfaults:\n  - {at: 1s, when: {event: granted, client: 1, delay: -1s}, fault: kill, node: n1}\n", 4, "faults[0].when.delay", "must not be negative"},
		{"within without when", "name: x\nexpect: safe\nfaults:\n  - {at: 1s, within: 1s, fault: kill, node: n1}\n", 4, "faults[0].within", "only goes with when"},
		{"wait without block", "name: x\nexpect: safe\nlock: {kind: reentrant, ttl: 1s, wait: 500ms}\n", 3, "lock.wait", "only with acquire: block"},
		{"acquire of an isolated client", "name: x\nexpect: safe\nisolate: [1]\nfaults:\n  - {at: 1s, when: {event: acquire, client: 1}, fault: kill, node: n1}\n", 5, "faults[0].when.event", "client 1 is isolated"},
		{"requirement names no fault", "name: x\nexpect: safe\nrequire:\n  - {grants: 1, after: kill n4}\n", 4, "require[0]", `no fault "kill n4"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenario.Parse("bad.yaml", []byte(tc.yaml))
			var fe *scenario.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *FileError", err)
			}
			if !errors.Is(err, scenario.ErrBadScenario) {
				t.Errorf("err does not wrap ErrBadScenario")
			}
			if got, want := fe.Line, tc.line; got != want && !(want < 0 && got > 0) {
				t.Errorf("line = %d, want %d (%v)", got, want, err)
			}
			if got, want := fe.Field, tc.field; got != want {
				t.Errorf("field = %q, want %q (%v)", got, want, err)
			}
			if !strings.Contains(fe.Msg, tc.msg) || !strings.HasPrefix(err.Error(), "bad.yaml:") {
				t.Errorf("error %q, want file prefix and %q", err, tc.msg)
			}
			if strings.Contains(fe.Msg, "in type") || strings.Contains(fe.Msg, "scenario.") {
				t.Errorf("error %q names a Go type", err)
			}
		})
	}
}

func TestLoadFile_RoundTripsBuiltins(t *testing.T) {
	for _, s := range scenario.All() {
		path := filepath.Join("catalogue", s.Name+".yaml")
		got, err := scenario.LoadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got.Name != s.Name || got.Expect != s.Expect || got.Lock.TTL != s.Lock.TTL {
			t.Errorf("%s: loaded %+v, builtin %+v", path, got, s)
		}
	}
	if _, err := scenario.LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, scenario.ErrBadScenario) {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestScenario_ArmMergesSections(t *testing.T) {
	s, err := scenario.Parse("arms.yaml", []byte(`name: x
expect: safe
lock: {kind: redlock, ttl: 4s, release_acquired_only: true}
faults:
  - {at: 1s, fault: kill, node: n1}
arms:
  - name: all
    lock: {release_acquired_only: false}
    faults: []
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Arm("all")
	if err != nil {
		t.Fatal(err)
	}
	if a.Lock.ReleaseAcquiredOnly || a.Lock.TTL != s.Lock.TTL || a.Lock.Kind != "redlock" {
		t.Errorf("arm lock = %+v, want the base lock with release_acquired_only off", a.Lock)
	}
	if len(a.Faults) != 0 || len(s.Faults) != 1 {
		t.Errorf("arm faults = %v, base faults = %v; want the list replaced in the arm only", a.Faults, s.Faults)
	}
	if _, err := s.Arm("none"); !errors.Is(err, scenario.ErrUnknownScenario) {
		t.Errorf("unknown arm: err = %v", err)
	}
}

// TestCatalogue_ArmsStateExpect: every arm of the catalogue states its own
// expect:, so no fix arm inherits the unsafe its scenario expects (compare
// judges each arm against its expectation), and the arm's variant carries it.
func TestCatalogue_ArmsStateExpect(t *testing.T) {
	for _, s := range scenario.All() {
		for _, a := range s.Arms {
			if a.Expect == "" {
				t.Errorf("%s: arm %s has no expect: of its own (it would inherit %s)", s.Name, a.Name, s.Expect)
				continue
			}
			v, err := s.Arm(a.Name)
			if err != nil {
				t.Fatal(err)
			}
			if v.Expect != a.Expect {
				t.Errorf("%s: arm %s states expect %s, its variant expects %s", s.Name, a.Name, a.Expect, v.Expect)
			}
		}
	}
}

// Requirements on an aimed step are accepted whether they name the aim or
// a node the aim can land on, and a partition's key_before is accepted.
func TestParse_RequirementsOnAimedAndNodeFaults(t *testing.T) {
	yaml := `name: x
expect: unsafe
duration: 5s
topology: {replicas: 1, sentinels: 3}
require:
  - {fault: kill, node: "@master", key_before: held}
  - {grants: 1, after: kill n2}
  - {fault: partition, node: n1, key_before: held, key_after: held}
  - {fault: sentinel-failover, node: "@master", key_before: held}
faults:
  - {at: 1s, fault: kill, node: "@master"}
  - {at: 2s, fault: partition, node: n1, for: 300ms}
  - {at: 3s, fault: sentinel-failover, node: "@master"}
`
	if _, err := scenario.Parse("ok.yaml", []byte(yaml)); err != nil {
		t.Fatal(err)
	}
}

// The fault kinds a scenario may name are the file's words: the client
// faults, not the process pause they are built on.
func TestFaultKinds_ScenarioVocabulary(t *testing.T) {
	kinds := scenario.FaultKinds()
	for _, k := range []string{"kill", "pause-client", "kill-client"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("FaultKinds() lacks %q: %v", k, kinds)
		}
	}
	if slices.Contains(kinds, "pause-process") {
		t.Errorf("FaultKinds() names the internal pause-process: %v", kinds)
	}
}
