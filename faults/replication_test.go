package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestCutReplicationFault_ReplicaMissesWrites(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
	ctx := context.Background()
	master, replica := c.Nodes[0], c.Nodes[1]
	mc, rc := testcluster.Client(t, master.Addr()), testcluster.Client(t, replica.Addr())
	f := &faults.CutReplicationFault{}
	if err := f.Inject(ctx, master); !errors.Is(err, cluster.ErrNoLink) {
		t.Fatalf("cut replication of a master: err=%v, want ErrNoLink", err)
	}
	testcluster.Inject(t, f, replica)
	if err := mc.Set(ctx, "lock", "token", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if acks, err := mc.Wait(ctx, 1, 200*time.Millisecond).Result(); err != nil || acks != 0 {
		t.Fatalf("WAIT = %d, %v; want 0 replicas reached", acks, err)
	}
	if err := rc.Get(ctx, "lock").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("replica GET lock: err=%v, want redis.Nil", err)
	}
	testcluster.Heal(t, f, replica)
	if err := testcluster.Eventually(func() error { return rc.Get(ctx, "lock").Err() }); err != nil {
		t.Fatalf("replica never caught up after heal: %v", err)
	}
}

// TestStart_ReplicationStreams checks that a write made the moment Start
// returns reaches the replica at once. Redis 7 holds a master's writes
// after a diskless full sync until the replica's first acknowledgement (up
// to a second later); a failover in that second loses them, which explore
// once took for a lock bug.
func TestStart_ReplicationStreams(t *testing.T) {
	for i := range 10 { // one cluster at a time: many at once starve the packages tested beside this one
		c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
		ctx := context.Background()
		mc, rc := testcluster.Client(t, c.Nodes[0].Addr()), testcluster.Client(t, c.Nodes[1].Addr())
		if err := mc.Set(ctx, "lock", "token", 0).Err(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(100 * time.Millisecond)
		for {
			v, err := rc.Get(ctx, "lock").Result()
			if err == nil && v == "token" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster %d: the replica lacks a write 100ms after it was made on a just-started master (err=%v)", i, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
