package main

import (
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

// TestBackendFits: the docker backend runs Redis nodes, etcd members and
// ZooKeeper members, and refuses PostgreSQL nodes and a clock fault on
// ZooKeeper members (their JVMs run without the clock shim there); the
// process backend runs everything.
func TestBackendFits(t *testing.T) {
	jump := []scenario.Step{{Fault: "clock-jump", Node: "z1"}}
	for _, tc := range []struct {
		backend string
		topo    scenario.Topology
		faults  []scenario.Step
		ok      bool
	}{
		{"docker", scenario.Topology{ZooKeeper: 3}, nil, true},
		{"docker", scenario.Topology{Etcd: 3}, nil, true},
		{"docker", scenario.Topology{Postgres: 1}, nil, false},
		{"docker", scenario.Topology{ZooKeeper: 3}, jump, false},
		{"docker", scenario.Topology{Masters: 1}, []scenario.Step{{Fault: "clock-jump", Node: "n1"}}, true},
		{"process", scenario.Topology{ZooKeeper: 3}, jump, true},
		{"process", scenario.Topology{Postgres: 1}, nil, true},
		{"", scenario.Topology{ZooKeeper: 3}, nil, true},
	} {
		s := scenario.Scenario{Name: "s", Topology: tc.topo, Faults: tc.faults}
		if err := backendFits(tc.backend, s); (err == nil) != tc.ok {
			t.Errorf("backendFits(%q, %+v) = %v, want ok %v", tc.backend, tc.topo, err, tc.ok)
		}
	}
}
