package cluster_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// clusterClient is a go-redis cluster client of c whose connections go
// through the nodes' client proxies, redirects included.
func clusterClient(tb testing.TB, c *cluster.Cluster) *redis.ClusterClient {
	tb.Helper()
	var seeds []string
	for _, n := range c.Nodes {
		seeds = append(seeds, n.Addr())
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, c.ClientAddr(addr))
		}})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestStart_RedisCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := testcluster.StartCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	t.Logf("3 primaries + 3 replicas started and joined in %v", time.Since(start))
	if len(c.Nodes) != 6 || !c.IsRedisCluster() {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	ctx := context.Background()
	owner, err := c.KeyOwner(ctx, "lock")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"lock", "{lock}:fence", "a{b}c", "x{}y", "{}z", "a}b", "{0}:fence:x{}y"} {
		want, err := testcluster.Client(t, c.Nodes[0].Addr()).ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := cluster.Slot(key); int64(got) != want {
			t.Fatalf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
	// Slot 8718 of "lock" falls in the second of three shards.
	if owner.Name != "n2" {
		t.Fatalf("lock owned by %s, want n2", owner.Name)
	}
	replicas := c.ReplicasOf(ctx, owner)
	if len(replicas) != 1 || replicas[0].Name != "n5" {
		t.Fatalf("replicas of n2: %v, want n5", replicas)
	}
	rdb := clusterClient(t, c)
	if err := rdb.Set(ctx, "lock", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The write went through n2's client proxy: cut it and the key is unreachable.
	testcluster.Inject(t, &faults.PartitionFault{Refuse: true}, owner)
	if err := rdb.Get(ctx, "lock").Err(); err == nil {
		t.Fatal("GET through a cut client link succeeded")
	}
	testcluster.Heal(t, &faults.PartitionFault{Refuse: true}, owner)
	if v, err := rdb.Get(ctx, "lock").Result(); err != nil || v != "x" {
		t.Fatalf("GET = %q, %v", v, err)
	}
}

func TestClusterFailoverFault_Takeover(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	ctx := context.Background()
	n5 := testcluster.Node(t, c, "n5")
	f := &faults.ClusterFailoverFault{Mode: "takeover"}
	start := time.Now()
	testcluster.Inject(t, f, n5)
	effect, err := faults.Verify(ctx, f, n5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s in %v: %s", faults.Describe(f, n5), time.Since(start), effect)
	if err := testcluster.Eventually(func() error {
		owner, err := c.KeyOwner(ctx, "lock")
		if err == nil && owner != n5 {
			return &ownerError{owner.Name}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := (&faults.ClusterFailoverFault{Mode: "sideways"}).Inject(ctx, n5); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
}

func TestRedisCluster_KilledPrimaryFailsOver(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	ctx := context.Background()
	n2 := testcluster.Node(t, c, "n2")
	start := time.Now()
	testcluster.Inject(t, &faults.KillFault{}, n2)
	err := testcluster.EventuallyWithin(10*time.Second, func() error {
		owner, err := c.KeyOwner(ctx, "lock")
		if err == nil && owner.Name != "n5" {
			return &ownerError{owner.Name}
		}
		return err
	})

	if err != nil {
		t.Fatal(err)
	}
	t.Logf("n5 took over n2's slots %v after the kill", time.Since(start))
	rdb := clusterClient(t, c)
	if err := testcluster.Eventually(func() error { return rdb.Set(ctx, "lock", "y", 0).Err() }); err != nil {
		t.Fatalf("no write after the failover: %v", err)
	}
}

type ownerError struct{ name string }

func (e *ownerError) Error() string { return "slot owned by " + e.name }

func TestBusPartitionFault_MinorityPrimary(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	ctx := context.Background()
	n2, n5 := testcluster.Node(t, c, "n2"), testcluster.Node(t, c, "n5")
	f := &faults.BusPartitionFault{}
	start := time.Now()
	testcluster.Inject(t, f, n2)
	effect, err := faults.Verify(ctx, f, n2)
	if err != nil {
		t.Fatal(err)
	}
	if want := "bus cut between n2 and n1,n3,n4,n5,n6; replication n2->n5 cut"; effect != want {
		t.Fatalf("effect %q, want %q", effect, want)
	}
	if err := (&faults.BusPartitionFault{}).Inject(ctx, n5); err == nil {
		t.Fatal("a second bus partition was accepted while one is in place")
	}
	// The minority primary still takes writes at first, which its replica
	// on the other side never gets.
	direct := testcluster.Client(t, n2.Addr())
	if err := direct.Set(ctx, "lock", "minority", 0).Err(); err != nil {
		t.Fatalf("the minority primary refused a write at once: %v", err)
	}
	// Then it notices it cannot reach a majority and refuses writes.
	var refusedAt time.Duration
	if err := testcluster.EventuallyWithin(5*time.Second, func() error {
		if err := direct.Set(ctx, "lock", "late", 0).Err(); err == nil {
			return &ownerError{"n2 still takes writes"}
		}
		refusedAt = time.Since(start)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The majority promotes n5, without the key.
	if err := testcluster.EventuallyWithin(10*time.Second, func() error {
		owner, err := c.KeyOwner(ctx, "lock")
		if err == nil && owner != n5 {
			return &ownerError{owner.Name}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	promotedAt := time.Since(start)
	t.Logf("n2 refused writes %v after the cut, n5 promoted after %v", refusedAt, promotedAt)
	if v, err := testcluster.Client(t, n5.Addr()).Get(ctx, "lock").Result(); err != redis.Nil {
		t.Fatalf("n5 has the key written on the minority side: %q, %v", v, err)
	}
	// Healed, n2 rejoins as n5's replica.
	testcluster.Heal(t, f, n2)
	if err := testcluster.EventuallyWithin(10*time.Second, func() error {
		role, err := direct.Do(ctx, "ROLE").Slice()
		if err == nil && role[0] != "slave" {
			return &ownerError{"n2 is " + role[0].(string)}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateSlotFault_MovesKeyWithTTL(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Shards: 3})
	ctx := context.Background()
	n1, n2 := testcluster.Node(t, c, "n1"), testcluster.Node(t, c, "n2")
	rdb := clusterClient(t, c)
	if err := rdb.Set(ctx, "lock", "held", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := (&faults.MigrateSlotFault{Key: "lock", To: "n3"}).Inject(ctx, n1); err == nil {
		t.Fatal("migrated a slot from a node that does not serve it")
	}
	f := &faults.MigrateSlotFault{Key: "lock", To: "n1"}
	testcluster.Inject(t, f, n2)
	effect, err := faults.Verify(ctx, f, n2)
	if err != nil {
		t.Fatal(err)
	}
	if effect != "slot 8718 moved n2->n1 with 1 keys" {
		t.Fatalf("effect %q", effect)
	}
	direct := testcluster.Client(t, n1.Addr())
	if ttl, err := direct.PTTL(ctx, "lock").Result(); err != nil || ttl <= 0 || ttl > 10*time.Second {
		t.Fatalf("on n1: PTTL = %v, %v; want the key with its TTL", ttl, err)
	}
	if v, err := rdb.Get(ctx, "lock").Result(); err != nil || v != "held" {
		t.Fatalf("cluster client GET = %q, %v", v, err)
	}
}

// TestRedisCluster_ReplicationFaultsFollowFailover: after n5 took n2's
// place, its replication stream runs n5->n2, and both cut-replication on
// n2 and a bus partition of n5 cut that one, not the stream as started.
func TestRedisCluster_ReplicationFaultsFollowFailover(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	ctx := context.Background()
	n2, n5 := testcluster.Node(t, c, "n2"), testcluster.Node(t, c, "n5")
	testcluster.Inject(t, &faults.ClusterFailoverFault{}, n5)
	if err := testcluster.EventuallyWithin(10*time.Second, func() error {
		if l := n2.ReplLink(); l != n5.Peer {
			return &ownerError{"n2 does not replicate through n5's peer link yet"}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n5.ReplLink() != nil {
		t.Fatal("the promoted n5 still has a replication link")
	}
	cut := &faults.CutReplicationFault{}
	testcluster.Inject(t, cut, n2)
	if !n5.Peer.IsCut() {
		t.Fatal("cut-replication on n2 did not cut n5's peer link")
	}
	f := &faults.BusPartitionFault{}
	testcluster.Inject(t, f, n5)
	effect, err := faults.Verify(ctx, f, n5)
	if err != nil {
		t.Fatal(err)
	}
	if want := "bus cut between n5 and n1,n2,n3,n4,n6; replication n5->n2 cut"; effect != want {
		t.Fatalf("effect %q, want %q", effect, want)
	}
	// Two holders cut n5's peer link: healing one leaves it cut.
	testcluster.Heal(t, f, n5)
	if !n5.Peer.IsCut() {
		t.Fatal("healing the bus partition reopened the link cut-replication still holds")
	}
	testcluster.Heal(t, cut, n2)
	if n5.Peer.IsCut() {
		t.Fatal("the link stayed cut after both heals")
	}
}

func TestParseClusterNodes(t *testing.T) {
	view, err := cluster.ParseClusterNodes("" +
		"a1 127.0.0.1:30001@40001,host1 myself,master - 0 0 1 connected 0-5460 [5461->-b2]\n" +
		"b2 127.0.0.1:30002@40002 master - 0 1 2 connected 5461 5462-10922 [5461-<-a1]\n" +
		"c3 :0@0 master,fail,noaddr - 1 1 3 disconnected\n" +
		"d4 127.0.0.1:30004@40004 slave a1 0 1 1 connected\n")
	if err != nil {
		t.Fatal(err)
	}
	got := cluster.DescribeClusterNodes(view)
	want := "a1 127.0.0.1:30001 myself,master epoch 1 [0-5460]; b2 127.0.0.1:30002 master epoch 2 [5461-5461 5462-10922]; " +
		"c3 :0 master,fail,noaddr epoch 3 []; d4 127.0.0.1:30004 slave epoch 1 []"
	if got != want {
		t.Fatalf("parsed\n%s\nwant\n%s", got, want)
	}
	if _, err := cluster.ParseClusterNodes("short line\n"); err == nil {
		t.Fatal("a short line parsed")
	}
}
