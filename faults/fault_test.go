package faults_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
)

func TestNewFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind   string
		params map[string]any
		want   faults.Fault
	}{
		{"kill", nil, &faults.KillFault{}},
		{"restart", map[string]any{"delay": "10s", "wipe": true}, &faults.RestartFault{Delay: 10 * time.Second, Wipe: true}},
		{"restart", map[string]any{"delay": 1e9}, &faults.RestartFault{Delay: time.Second}},
		{"pause", nil, &faults.PauseFault{}},
		{"pause-process", map[string]any{"pid": 42}, &faults.ProcessPauseFault{PID: 42}},
		{"partition", map[string]any{"direction": "to-node"}, &faults.PartitionFault{Direction: faults.ToNode}},
		{"partition", map[string]any{"link": "repl", "refuse": true}, &faults.PartitionFault{Link: "repl", Refuse: true}},
		{"latency", map[string]any{"latency": "200ms", "jitter": "50ms"}, &faults.LatencyFault{Latency: 200 * time.Millisecond, Jitter: 50 * time.Millisecond}},
		{"drop-replies", nil, &faults.DropRepliesFault{}},
		{"reset", nil, &faults.ResetFault{}},
		{"clock-jump", map[string]any{"offset": "-20s"}, &faults.ClockJumpFault{Offset: -20 * time.Second}},
		{"clock-rate", map[string]any{"rate": 1.5}, &faults.ClockRateFault{Rate: 1.5}},
		{"cut-replication", nil, &faults.CutReplicationFault{}},
		{"promote", map[string]any{"demote": true}, &faults.PromoteFault{Demote: true}},
		{"sentinel-failover", map[string]any{"timeout": "5s"}, &faults.SentinelFailoverFault{Timeout: 5 * time.Second}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			got, err := faults.NewFault(tc.kind, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("NewFault(%q, %v) = %#v, want %#v", tc.kind, tc.params, got, tc.want)
			}
		})
	}
}

func TestNewFault_Errors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		kind   string
		params map[string]any
		want   error
	}{
		{"unknown kind", "meteor", nil, faults.ErrUnknownFault},
		{"unknown param", "latency", map[string]any{"latncy": "1s"}, cluster.ErrBadFault},
		{"bad duration", "latency", map[string]any{"latency": "soon"}, cluster.ErrBadFault},
		{"ill-typed", "restart", map[string]any{"wipe": "yes"}, cluster.ErrBadFault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := faults.NewFault(tc.kind, tc.params); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFaultKinds(t *testing.T) {
	t.Parallel()
	kinds := faults.FaultKinds()
	for _, k := range []string{"kill", "restart", "pause", "partition", "latency", "drop-replies", "clock-jump", "cut-replication"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("FaultKinds() = %v, missing %q", kinds, k)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    faults.Fault
		want string
	}{
		{&faults.LatencyFault{Latency: 200 * time.Millisecond, Jitter: 50 * time.Millisecond}, "latency 200ms±50ms both"},
		{&faults.ClockJumpFault{Offset: 20 * time.Second}, "clock jump +20s"},
		{&faults.RestartFault{Delay: 5 * time.Second, Wipe: true}, "restart after 5s, wiped"},
		{&faults.PartitionFault{Link: "repl", Refuse: true}, "partition repl refuse"},
	} {
		if got := faults.Describe(tc.f, nil); got != tc.want {
			t.Errorf("Describe(%#v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

// Faults say where they can act: placing one off its topology is refused
// before anything runs.
func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		kind string
		topo cluster.Topology
		node string
		want string // a substring of the error; "" for nil
	}{
		{"sentinel-failover", cluster.Topology{Replicas: 1}, "", "needs sentinels"},
		{"sentinel-failover", cluster.Topology{Replicas: 1, Sentinels: 3}, "", ""},
		{"sentinel-failover", cluster.Topology{Replicas: 1, Sentinels: 3}, "n2", ""},
		{"sentinel-failover", cluster.Topology{Masters: 2, Replicas: 1, Sentinels: 3}, "n2", "watch n1 and its replicas"},
		{"bus-partition", cluster.Topology{Masters: 3}, "n1", "needs a Redis Cluster"},
		{"bus-partition", cluster.Topology{Shards: 3}, "n1", ""},
		{"cut-replication", cluster.Topology{}, "n1", "needs a topology with replicas"},
		{"promote", cluster.Topology{Replicas: 1}, "n1", "starts as a master"},
		{"promote", cluster.Topology{Replicas: 1}, "n2", ""},
		{"promote", cluster.Topology{Shards: 3, Replicas: 1}, "n4", "refuses REPLICAOF"},
		{"cluster-failover", cluster.Topology{Shards: 3, Replicas: 1}, "n4", ""},
		{"cluster-failover", cluster.Topology{Shards: 3, Replicas: 1}, "n1", "starts as a master"},
		{"cluster-failover", cluster.Topology{Shards: 3}, "", "needs a topology with replicas"},
		{"kill", cluster.Topology{Masters: 3}, "r1", "Redis node's process"},
		{"kill", cluster.Topology{Masters: 3}, "n4", "Redis node's process"},
		{"partition", cluster.Topology{}, "r1", ""},
		{"partition", cluster.Topology{}, "n1", ""},
		{"latency", cluster.Topology{Replicas: 1}, "r1", "not one"},
		{"reset", cluster.Topology{Masters: 3}, "n1", "needs a Redis Cluster"},
	} {
		var params map[string]any
		switch tc.kind {
		case "latency":
			params = map[string]any{"link": "repl"}
		case "reset":
			params = map[string]any{"link": "bus"}
		}
		f, err := faults.NewFault(tc.kind, params)
		if err != nil {
			t.Fatal(err)
		}
		err = faults.Place(f, tc.topo, tc.node)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Place(%s on %q of %+v) = %v, want %q", tc.kind, tc.node, tc.topo, err, tc.want)
		}
	}
}
