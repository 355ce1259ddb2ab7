package main

import (
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

// TestBackendFits: the docker backend runs Redis nodes, etcd members and
// ZooKeeper members, and refuses PostgreSQL nodes; the process backend
// runs everything.
func TestBackendFits(t *testing.T) {
	for _, tc := range []struct {
		backend string
		topo    scenario.Topology
		ok      bool
	}{
		{"docker", scenario.Topology{ZooKeeper: 3}, true},
		{"docker", scenario.Topology{Etcd: 3}, true},
		{"docker", scenario.Topology{Postgres: 1}, false},
		{"process", scenario.Topology{Postgres: 1}, true},
		{"", scenario.Topology{ZooKeeper: 3}, true},
	} {
		s := scenario.Scenario{Name: "s", Topology: tc.topo}
		if err := backendFits(tc.backend, s); (err == nil) != tc.ok {
			t.Errorf("backendFits(%q, %+v) = %v, want ok %v", tc.backend, tc.topo, err, tc.ok)
		}
	}
}
