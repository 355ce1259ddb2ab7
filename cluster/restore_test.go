package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// TestRestore_AfterSentinelFailover: after a failover the old master comes
// back as a master the sentinels ignore; Restore makes it the master again
// with the replica behind its replication proxy, so the same attack (cut
// the replica off, write, kill the master) loses the write a second time.
func TestRestore_AfterSentinelFailover(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1, Sentinels: 3, DownAfter: 400 * time.Millisecond})
	ctx := context.Background()
	if did, err := c.Restore(ctx); err != nil || did != "" {
		t.Fatalf("Restore of a fresh topology = %q, %v; want nothing to do", did, err)
	}
	n1, n2 := testcluster.Node(t, c, "n1"), testcluster.Node(t, c, "n2")
	for round := 1; round <= 2; round++ {
		cut := &faults.CutReplicationFault{}
		testcluster.Inject(t, cut, n2)
		if err := testcluster.Client(t, n1.Addr()).Set(ctx, "lock", "held", 0).Err(); err != nil {
			t.Fatal(err)
		}
		testcluster.Inject(t, &faults.KillFault{}, n1)
		promoted, err := c.WaitFailover(ctx, n1, 15*time.Second)
		if err != nil || promoted != n2 {
			t.Fatalf("round %d: failover = %v, %v; want n2", round, promoted, err)
		}
		if n, err := testcluster.Client(t, n2.Addr()).Exists(ctx, "lock").Result(); err != nil || n != 0 {
			t.Fatalf("round %d: the promoted replica has the key (%d, %v): the cut did not hold", round, n, err)
		}
		testcluster.Heal(t, cut, n2)
		testcluster.Heal(t, &faults.KillFault{}, n1)
		start := time.Now()
		did, err := c.Restore(ctx)
		if err != nil || did == "" {
			t.Fatalf("round %d: Restore = %q, %v; want a change", round, did, err)
		}
		t.Logf("round %d: restored in %v: %s", round, time.Since(start).Round(time.Millisecond), did)
		if m, err := c.CurrentMaster(ctx); err != nil || m != n1 {
			t.Fatalf("round %d: sentinels name %v (%v) master; want n1", round, m, err)
		}
		if did, err := c.Restore(ctx); err != nil || did != "" {
			t.Fatalf("round %d: a second Restore = %q, %v; want nothing to do", round, did, err)
		}
	}
}

// TestRestore_RedisCluster: a failover to n4 and a slot moved to n3 are
// both undone.
func TestRestore_RedisCluster(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Shards: 3, Replicas: 1})
	ctx := context.Background()
	n1, n2, n4 := testcluster.Node(t, c, "n1"), testcluster.Node(t, c, "n2"), testcluster.Node(t, c, "n4")
	testcluster.Inject(t, &faults.ClusterFailoverFault{}, n4)
	testcluster.Inject(t, &faults.MigrateSlotFault{Key: "lock", To: "n3"}, n2)
	did, err := c.Restore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restored: %s", did)
	if role := roleOf(t, n1); role != "master" {
		t.Fatalf("n1 is a %s after Restore", role)
	}
	if owner, err := c.KeyOwner(ctx, "lock"); err != nil || owner != n2 {
		t.Fatalf("lock's slot served by %v (%v) after Restore; want n2", owner, err)
	}
	if reps := c.ReplicasOf(ctx, n1); len(reps) != 1 || reps[0] != n4 {
		t.Fatalf("n1's replicas %v after Restore; want n4", reps)
	}
	if did, err := c.Restore(ctx); err != nil || did != "" {
		t.Fatalf("a second Restore = %q, %v; want nothing to do", did, err)
	}
}

func roleOf(t *testing.T, n *cluster.Node) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: n.Proc.Addr()})
	defer rdb.Close()
	s, err := rdb.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"master", "slave"} {
		if strings.Contains(s, "role:"+role+"\r\n") {
			return role
		}
	}
	return "unknown"
}

// TestRestore_AfterPromoteDemote: a promotion that demoted n1 is undone,
// and the same promotion works again (it reuses n1's replication proxy).
func TestRestore_AfterPromoteDemote(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
	ctx := context.Background()
	n1, n2 := testcluster.Node(t, c, "n1"), testcluster.Node(t, c, "n2")
	for round := 1; round <= 2; round++ {
		testcluster.Inject(t, &faults.PromoteFault{Demote: true}, n2)
		if role := roleOf(t, n1); role != "slave" {
			t.Fatalf("round %d: n1 is a %s after the demotion", round, role)
		}
		did, err := c.Restore(ctx)
		if err != nil || did == "" {
			t.Fatalf("round %d: Restore = %q, %v; want a change", round, did, err)
		}
		if role := roleOf(t, n1); role != "master" {
			t.Fatalf("round %d: n1 is a %s after Restore", round, role)
		}
		if role := roleOf(t, n2); role != "slave" {
			t.Fatalf("round %d: n2 is a %s after Restore", round, role)
		}
	}
}

// TestRestore_RefusesFaultsLeftInPlace: Restore does not heal; a cut link
// makes it fail rather than report the topology as it started.
func TestRestore_RefusesFaultsLeftInPlace(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
	n2 := testcluster.Node(t, c, "n2")
	testcluster.Inject(t, &faults.CutReplicationFault{}, n2)
	if did, err := c.Restore(context.Background()); err == nil || !strings.Contains(err.Error(), "n2-repl cut") {
		t.Fatalf("Restore with n2's replication cut = %q, %v; want an error naming it", did, err)
	}
}
