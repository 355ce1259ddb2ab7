package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestDropRepliesFault_AppliedButUnanswered(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	ctx := context.Background()
	n := c.Nodes[0]
	rdb := testcluster.Client(t, n.Addr(), 300*time.Millisecond)
	direct := testcluster.Client(t, n.Proc.Addr())
	// Connect first: the handshake (HELLO) of a new connection would lose
	// its reply too, and the SET would never be sent.
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f := &faults.DropRepliesFault{}
	testcluster.Inject(t, f, n)
	if err := rdb.SetNX(ctx, "lock", "token", time.Minute).Err(); !testcluster.IsTimeout(err) {
		t.Fatalf("SET NX err = %v, want a timeout", err)
	}
	if got, err := direct.Get(ctx, "lock").Result(); err != nil || got != "token" {
		t.Fatalf("GET lock on the node = %q, %v; want the SET applied", got, err)
	}
	testcluster.Heal(t, f, n)
	if err := testcluster.Eventually(func() error { return rdb.Ping(ctx).Err() }); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
}
