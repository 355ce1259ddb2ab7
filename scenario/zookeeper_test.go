package scenario_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

const zkHead = "name: x\nexpect: safe\ntopology: {zookeeper: 3}\n"

func TestParse_ZooKeeperErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"zk lock on Redis", "name: x\nexpect: safe\nlock: {kind: zk-lock, acquire: block, ttl: 2s}\n", 3, "lock.kind", "needs topology: {zookeeper: 3}"},
		{"Redis lock on ZooKeeper", zkHead + "lock: {kind: set-nx}\n", 4, "lock.kind", "is not a ZooKeeper lock"},
		{"two members", "name: x\nexpect: safe\ntopology: {zookeeper: 2}\nlock: {kind: zk-lock, acquire: block}\n", 3, "topology.zookeeper", "1, 3 or 5"},
		{"PostgreSQL beside ZooKeeper", "name: x\nexpect: safe\ntopology: {zookeeper: 3, postgres: 1}\nlock: {kind: zk-lock, acquire: block}\n", 3, "topology.zookeeper", "no Redis nodes, etcd members or PostgreSQL nodes"},
		{"try-lock", zkHead + "lock: {kind: zk-lock, ttl: 2s}\n", 4, "lock.acquire", "no try-lock"},
		{"session too short", zkHead + "lock: {kind: zk-lock, acquire: block, ttl: 100ms}\n", 4, "lock.ttl", "session timeout"},
		{"member out of range", zkHead + "lock: {kind: zk-lock, acquire: block, ttl: 2s}\nfaults:\n  - {at: 1s, fault: kill, node: z4}\n", 6, "faults[0].node", `no node "z4"`},
		{"peer partition", zkHead + "lock: {kind: zk-lock, acquire: block, ttl: 2s}\nfaults:\n  - {at: 1s, fault: peer-partition, node: z1}\n", 6, "faults[0].fault", "connects back"},
		{"@master on ZooKeeper", zkHead + "lock: {kind: zk-lock, acquire: block, ttl: 2s}\nfaults:\n  - {at: 1s, fault: kill, node: \"@master\"}\n", 6, "faults[0].node", "aim at ZooKeeper members with @leader"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParseError(t, tc.yaml, tc.line, tc.field, tc.msg) })
	}
}

// checkParseError parses yaml and fails t unless it is refused at line,
// in field, with msg in the message.
func checkParseError(t *testing.T, yaml string, line int, field, msg string) {
	t.Helper()
	_, err := scenario.Parse("bad.yaml", []byte(yaml))
	var fe *scenario.FileError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want *FileError", err)
	}
	if got, want := fe.Line, line; got != want {
		t.Errorf("line = %d, want %d (%v)", got, want, err)
	}
	if got, want := fe.Field, field; got != want {
		t.Errorf("field = %q, want %q (%v)", got, want, err)
	}
	if !strings.Contains(fe.Msg, msg) {
		t.Errorf("error %q, want %q", err, msg)
	}
}

// TestParse_ZooKeeper accepts a ZooKeeper scenario aiming at the leader
// and a client's own link to a member.
func TestParse_ZooKeeper(t *testing.T) {
	yaml := zkHead + "lock: {kind: zk-lock, acquire: block, ttl: 2s}\nclients: 2\nfaults:\n  - {at: 1s, fault: kill, node: \"@leader\"}\n  - {at: 1s, fault: partition, node: z2-c1}\n"
	if _, err := scenario.Parse("ok.yaml", []byte(yaml)); err != nil {
		t.Fatal(err)
	}
}
