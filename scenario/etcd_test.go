package scenario_test

import (
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

const etcdHead = "name: x\nexpect: safe\ntopology: {etcd: 3}\n"

func TestParse_EtcdErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"etcd lock on Redis", "name: x\nexpect: safe\nlock: {kind: etcd-mutex}\n", 3, "lock.kind", "needs topology: {etcd: 3}"},
		{"Redis lock on etcd", etcdHead + "lock: {kind: set-nx}\n", 4, "lock.kind", "is a Redis lock"},
		{"Redis nodes beside etcd", "name: x\nexpect: safe\ntopology: {etcd: 3, masters: 1}\nlock: {kind: etcd-mutex}\n", 3, "topology.etcd", "no Redis nodes"},
		{"too many members", "name: x\nexpect: safe\ntopology: {etcd: 9}\nlock: {kind: etcd-mutex}\n", 3, "topology.etcd", "between 0"},
		{"v3lock without block", etcdHead + "lock: {kind: etcd-v3lock}\n", 4, "lock.acquire", "no try-lock"},
		{"lease under 2s", etcdHead + "lock: {kind: etcd-mutex, ttl: 1s}\n", 4, "lock.ttl", "at least 2s"},
		{"lease of a fraction", etcdHead + "lock: {kind: etcd-mutex, ttl: 2500ms}\n", 4, "lock.ttl", "whole seconds"},
		{"ignore_lost on Redis", "name: x\nexpect: safe\nlock: {kind: set-nx, ignore_lost: true}\n", 3, "lock.ignore_lost", "an option of etcd's and ZooKeeper's locks"},
		{"Redis node on etcd", etcdHead + "lock: {kind: etcd-mutex}\nfaults:\n  - {at: 1s, fault: kill, node: n1}\n", 6, "faults[0].node", "etcd members e1..e3"},
		{"member out of range", etcdHead + "lock: {kind: etcd-mutex}\nfaults:\n  - {at: 1s, fault: kill, node: e4}\n", 6, "faults[0].node", `no node "e4"`},
		{"clock jump on a member", etcdHead + "lock: {kind: etcd-mutex}\nfaults:\n  - {at: 1s, fault: clock-jump, node: e1, params: {offset: 10s}}\n", 6, "faults[0].fault", "bypasses libc"},
		{"no-fsync on Redis", "name: x\nexpect: safe\ntopology: {persistence: no-fsync}\n", 3, "topology.persistence", "for etcd and ZooKeeper members"},
		{"@leader on Redis", "name: x\nexpect: safe\nfaults:\n  - {at: 1s, fault: kill, node: \"@leader\"}\n", 4, "faults[0].node", "needs etcd or ZooKeeper members"},
		{"@master on etcd", etcdHead + "lock: {kind: etcd-mutex}\nfaults:\n  - {at: 1s, fault: kill, node: \"@master\"}\n", 6, "faults[0].node", "aim at etcd members with @leader"},
		{"kill on a client's link to a member", etcdHead + "lock: {kind: etcd-mutex}\nfaults:\n  - {at: 1s, fault: kill, node: e1-c1}\n", 6, "faults[0].node", "only partition, latency"},
		{"link of no client", etcdHead + "lock: {kind: etcd-mutex}\nclients: 2\nfaults:\n  - {at: 1s, fault: partition, node: e1-c3}\n", 7, "faults[0].node", `no node "e1-c3"`},
		{"key_after on a member", etcdHead + "lock: {kind: etcd-mutex}\nrequire:\n  - {fault: kill, node: e1, key_after: held}\nfaults:\n  - {at: 1s, fault: kill, node: e1}\n", 6, "require[0].key_after", "not read"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParseError(t, tc.yaml, tc.line, tc.field, tc.msg) })
	}
}

func TestParse_EtcdScenario(t *testing.T) {
	s, err := scenario.Parse("ok.yaml", []byte(etcdHead+`lock: {kind: etcd-v3lock, acquire: block, ttl: 2s}
require:
  - {fault: kill, node: "@leader", key_before: held}
faults:
  - {at: 1s, fault: kill, node: "@leader", for: 1s}
  - {at: 1s, fault: pause, node: "@follower", for: 1s}
  - {at: 1s, fault: restart, node: e2, params: {wipe: true}}
  - {at: 1s, fault: partition, node: e2-c1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Topology.Cluster().Etcd, 3; got != want {
		t.Errorf("cluster topology etcd = %d, want %d", got, want)
	}
	if !s.UsesClientLinks() {
		t.Errorf("a partition on e2-c1 makes no client links")
	}
	if got := s.Topology.Nodes(); got != 0 {
		t.Errorf("Redis nodes = %d, want 0", got)
	}
	if err := s.Fits("clock-jump"); err == nil {
		t.Errorf("Fits(clock-jump) = nil on etcd members")
	}
	if err := s.Fits("kill"); err != nil {
		t.Errorf("Fits(kill) = %v", err)
	}
}
