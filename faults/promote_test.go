package faults_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// role returns the node's replication role, asked of the process directly.
func role(ctx context.Context, tb testing.TB, n *cluster.Node) string {
	tb.Helper()
	v, err := testcluster.Client(tb, n.Proc.Addr()).Do(ctx, "ROLE").Slice()
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprint(v[0])
}

func TestPromoteFault_ReplicaBecomesMaster(t *testing.T) {
	t.Parallel()
	for _, demote := range []bool{false, true} {
		t.Run(fmt.Sprintf("demote=%v", demote), func(t *testing.T) {
			t.Parallel()
			c := testcluster.StartCluster(t, cluster.Topology{Replicas: 2})
			ctx := context.Background()
			n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
			// The lock taken on the old master never reaches the replicas.
			testcluster.Inject(t, &faults.CutReplicationFault{}, n2)
			testcluster.Inject(t, &faults.CutReplicationFault{}, n3)
			if err := testcluster.Client(t, n1.Addr()).Set(ctx, "lock", "A", 0).Err(); err != nil {
				t.Fatal(err)
			}
			testcluster.Heal(t, &faults.CutReplicationFault{}, n3)

			f := &faults.PromoteFault{Demote: demote}
			if err := f.Inject(ctx, n1); !errors.Is(err, cluster.ErrNoLink) {
				t.Fatalf("promote a master: err=%v, want ErrNoLink", err)
			}
			testcluster.Inject(t, f, n2)
			if got := role(ctx, t, n2); got != "master" {
				t.Fatalf("n2 role %q after promotion, want master", got)
			}
			nc := testcluster.Client(t, n2.Addr())
			if err := nc.Get(ctx, "lock").Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("new master has the old lock (err=%v); the lost write should be lost", err)
			}
			if err := nc.Set(ctx, "lock", "B", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// n3 now follows n2.
			if err := testcluster.Eventually(func() error { return wantValue(ctx, testcluster.Client(t, n3.Addr()), "lock", "B") }); err != nil {
				t.Fatalf("n3 does not follow the new master: %v", err)
			}
			if !demote {
				if got := role(ctx, t, n1); got != "master" {
					t.Fatalf("old master role %q without demote, want master (split brain)", got)
				}
				if err := wantValue(ctx, testcluster.Client(t, n1.Addr()), "lock", "A"); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := testcluster.Eventually(func() error { return wantValue(ctx, testcluster.Client(t, n1.Addr()), "lock", "B") }); err != nil {
				t.Fatalf("demoted master does not follow the new master: %v", err)
			}
			if got := role(ctx, t, n1); got != "slave" {
				t.Fatalf("old master role %q after demote, want slave", got)
			}
		})
	}
}

func wantValue(ctx context.Context, rdb *redis.Client, key, want string) error {
	got, err := rdb.Get(ctx, key).Result()
	if err != nil || got != want {
		return fmt.Errorf("GET %s = %q, %v; want %q", key, got, err, want)
	}
	return nil
}
