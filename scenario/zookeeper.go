package scenario

import (
	"slices"
	"strings"
	"time"
)

// zkKinds are the locks that live on a ZooKeeper ensemble.
var zkKinds = []string{"zk-lock", "zk-lock-fenced"}

// ZooKeeperLock reports whether kind is one of ZooKeeper's locks, which
// need a ZooKeeper topology.
func ZooKeeperLock(kind string) bool { return slices.Contains(zkKinds, kind) }

// ZooKeeper's session timeouts, as package cluster configures its members:
// at least 2 ticks of 200ms, at most 60s. A ZooKeeper lock's ttl is its
// session timeout.
const (
	zkMinTTL = 400 * time.Millisecond
	zkMaxTTL = 60 * time.Second
)

// validZooKeeper checks a ZooKeeper topology, and that ZooKeeper's locks
// and ZooKeeper members go together.
func (s Scenario) validZooKeeper() error {
	t, kind := s.Topology, s.Lock.Kind
	switch {
	case t.ZooKeeper != 0 && t.ZooKeeper != 1 && t.ZooKeeper != 3 && t.ZooKeeper != 5:
		return bad("topology.zookeeper", "must be 0 (none), 1, 3 or 5 members, not %d", t.ZooKeeper)
	case t.ZooKeeper > 0 && (t.Masters > 0 || t.Replicas > 0 || t.Sentinels > 0 || t.Shards > 0 || t.DownAfter != 0 ||
		t.NodeTimeout != 0 || (t.Persistence != "" && t.Persistence != "no-fsync") || t.BackgroundWrites != 0 || t.Etcd > 0 || t.Postgres > 0):
		return bad("topology.zookeeper", "a ZooKeeper topology has no Redis nodes, etcd members or PostgreSQL nodes: drop masters, replicas, sentinels, shards, down_after, node_timeout, persistence (but no-fsync), background_writes, etcd and postgres")
	case ZooKeeperLock(kind) && t.ZooKeeper == 0:
		return bad("lock.kind", "%s runs on a ZooKeeper ensemble: it needs topology: {zookeeper: 3}", kind)
	case t.ZooKeeper > 0 && !ZooKeeperLock(kind) && kind != "external" && kind != "none":
		return bad("lock.kind", "%s is not a ZooKeeper lock; a ZooKeeper topology takes %s, external or none", kind, strings.Join(zkKinds, ", "))
	case ZooKeeperLock(kind) && s.Lock.Acquire != AcquireBlock:
		return bad("lock.acquire", "%s is go-zookeeper's lock recipe, which has no try-lock: set acquire: block", kind)
	case ZooKeeperLock(kind) && (s.Lock.TTL.D() < zkMinTTL || s.Lock.TTL.D() > zkMaxTTL):
		return bad("lock.ttl", "is the ZooKeeper session timeout, between %v and %v with lockpick's member timings, not %v", zkMinTTL, zkMaxTTL, s.Lock.TTL.D())
	}
	return nil
}

// validZooKeeperNode accepts, in a ZooKeeper topology, the members
// z1..zN, the resource paths r1..rC and the clients' own links to
// members, z<i>-c<p>.
func (s Scenario) validZooKeeperNode(name string) bool {
	return s.validMemberNode(name, s.Topology.Cluster().ZooKeeperIndex)
}
