package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
)

func TestDropRepliesFault_AppliedButUnanswered(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Topology{})
	ctx := context.Background()
	n := c.Nodes[0]
	rdb := client(t, n.Addr(), 300*time.Millisecond)
	direct := client(t, n.Proc.Addr())
	// Connect first: the handshake (HELLO) of a new connection would lose
	// its reply too, and the SET would never be sent.
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f := &faults.DropRepliesFault{}
	inject(t, f, n)
	if err := rdb.SetNX(ctx, "lock", "token", time.Minute).Err(); !isTimeout(err) {
		t.Fatalf("SET NX err = %v, want a timeout", err)
	}
	if got, err := direct.Get(ctx, "lock").Result(); err != nil || got != "token" {
		t.Fatalf("GET lock on the node = %q, %v; want the SET applied", got, err)
	}
	heal(t, f, n)
	if err := eventually(func() error { return rdb.Ping(ctx).Err() }); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
}
