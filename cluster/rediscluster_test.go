package cluster_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
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
	c := startCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	t.Logf("3 primaries + 3 replicas started and joined in %v", time.Since(start))
	if len(c.Nodes) != 6 || !c.IsRedisCluster() {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	ctx := context.Background()
	owner, err := c.KeyOwner(ctx, "lock")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"lock", "{lock}:fence", "a{b}c", "x{}y", "{}z"} {
		want, err := client(t, c.Nodes[0].Addr()).ClusterKeySlot(ctx, key).Result()
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
	inject(t, &cluster.PartitionFault{Refuse: true}, owner)
	if err := rdb.Get(ctx, "lock").Err(); err == nil {
		t.Fatal("GET through a cut client link succeeded")
	}
	heal(t, &cluster.PartitionFault{Refuse: true}, owner)
	if v, err := rdb.Get(ctx, "lock").Result(); err != nil || v != "x" {
		t.Fatalf("GET = %q, %v", v, err)
	}
}

func TestClusterFailoverFault_Takeover(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	ctx := context.Background()
	n5 := node(t, c, "n5")
	f := &cluster.ClusterFailoverFault{Mode: "takeover"}
	start := time.Now()
	inject(t, f, n5)
	effect, err := cluster.Verify(ctx, f, n5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s in %v: %s", cluster.Describe(f, n5), time.Since(start), effect)
	if err := eventually(func() error {
		owner, err := c.KeyOwner(ctx, "lock")
		if err == nil && owner != n5 {
			return &ownerError{owner.Name}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := (&cluster.ClusterFailoverFault{Mode: "sideways"}).Inject(ctx, n5); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
}

func TestRedisCluster_KilledPrimaryFailsOver(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	ctx := context.Background()
	n2 := node(t, c, "n2")
	start := time.Now()
	inject(t, &cluster.KillFault{}, n2)
	err := eventuallyWithin(10*time.Second, func() error {
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
	if err := eventually(func() error { return rdb.Set(ctx, "lock", "y", 0).Err() }); err != nil {
		t.Fatalf("no write after the failover: %v", err)
	}
}

type ownerError struct{ name string }

func (e *ownerError) Error() string { return "slot owned by " + e.name }

func TestBusPartitionFault_MinorityPrimary(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	ctx := context.Background()
	n2, n5 := node(t, c, "n2"), node(t, c, "n5")
	f := &cluster.BusPartitionFault{}
	start := time.Now()
	inject(t, f, n2)
	effect, err := cluster.Verify(ctx, f, n2)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(effect)
	// The minority primary still takes writes at first, which its replica
	// on the other side never gets.
	direct := client(t, n2.Addr())
	if err := direct.Set(ctx, "lock", "minority", 0).Err(); err != nil {
		t.Fatalf("the minority primary refused a write at once: %v", err)
	}
	// Then it notices it cannot reach a majority and refuses writes.
	var refusedAt time.Duration
	if err := eventuallyWithin(5*time.Second, func() error {
		if err := direct.Set(ctx, "lock", "late", 0).Err(); err == nil {
			return &ownerError{"n2 still takes writes"}
		}
		refusedAt = time.Since(start)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The majority promotes n5, without the key.
	if err := eventuallyWithin(10*time.Second, func() error {
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
	if v, err := client(t, n5.Addr()).Get(ctx, "lock").Result(); err != redis.Nil {
		t.Fatalf("n5 has the key written on the minority side: %q, %v", v, err)
	}
	// Healed, n2 rejoins as n5's replica.
	heal(t, f, n2)
	if err := eventuallyWithin(10*time.Second, func() error {
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
	c := startCluster(t, cluster.Topology{Shards: 3})
	ctx := context.Background()
	n1, n2 := node(t, c, "n1"), node(t, c, "n2")
	rdb := clusterClient(t, c)
	if err := rdb.Set(ctx, "lock", "held", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := (&cluster.MigrateSlotFault{Key: "lock", To: "n3"}).Inject(ctx, n1); err == nil {
		t.Fatal("migrated a slot from a node that does not serve it")
	}
	f := &cluster.MigrateSlotFault{Key: "lock", To: "n1"}
	inject(t, f, n2)
	effect, err := cluster.Verify(ctx, f, n2)
	if err != nil {
		t.Fatal(err)
	}
	if effect != "slot 8718 moved n2->n1 with 1 keys" {
		t.Fatalf("effect %q", effect)
	}
	direct := client(t, n1.Addr())
	if ttl, err := direct.PTTL(ctx, "lock").Result(); err != nil || ttl <= 0 || ttl > 10*time.Second {
		t.Fatalf("on n1: PTTL = %v, %v; want the key with its TTL", ttl, err)
	}
	if v, err := rdb.Get(ctx, "lock").Result(); err != nil || v != "held" {
		t.Fatalf("cluster client GET = %q, %v", v, err)
	}
}
