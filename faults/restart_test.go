package faults_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestRestartFault_Persistence(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Masters: 4, NodePersistence: map[string]cluster.Persistence{
		"n1": cluster.PersistNone,
		"n2": cluster.PersistAOFEverySec,
		"n3": cluster.PersistAOFAlways,
		"n4": cluster.PersistAOFAlways,
	}})

	for _, tc := range []struct {
		node     string
		fault    *faults.RestartFault
		wantKept bool
	}{
		{"n1", &faults.RestartFault{}, false},
		// kill -9 loses nothing the process already wrote to the kernel,
		// which everysec does before it replies.
		{"n2", &faults.RestartFault{}, true},
		{"n3", &faults.RestartFault{}, true},
		{"n4", &faults.RestartFault{Wipe: true}, false},
	} {
		t.Run(tc.node, func(t *testing.T) {
			ctx := context.Background()
			n := testcluster.Node(t, c, tc.node)
			rdb := testcluster.Client(t, n.Addr())
			if err := rdb.Set(ctx, "lock", "token", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			testcluster.Inject(t, tc.fault, n)
			got, err := rdb.Get(ctx, "lock").Result()
			switch {
			case tc.wantKept && (err != nil || got != "token"):
				t.Fatalf("%s after %s: GET = %q, %v; want the key kept", tc.node, faults.Describe(tc.fault, n), got, err)
			case !tc.wantKept && !errors.Is(err, redis.Nil):
				t.Fatalf("%s after %s: GET = %q, %v; want the key lost", tc.node, faults.Describe(tc.fault, n), got, err)
			}
		})
	}
}

func TestRestartFault_DelayKeepsNodeDown(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	n := c.Nodes[0]
	const delay = time.Second
	f := &faults.RestartFault{Delay: delay}

	var (
		wg        sync.WaitGroup
		injectErr error
	)
	start := time.Now()
	wg.Add(1)
	go func() { defer wg.Done(); injectErr = f.Inject(context.Background(), n) }()

	// Probe through the client proxy until the node answers again.
	rdb := testcluster.Client(t, n.Addr(), 100*time.Millisecond)
	// The node must be seen down right up to the end of the delay (within
	// one probe interval plus a probe timeout).
	testcluster.CheckDownForDelay(t, rdb, start, delay, delay+5*time.Second, 150*time.Millisecond, 2*time.Second,
		func() error { wg.Wait(); return injectErr })
}

func TestRestartFault_CancelLeavesNodeDownForHeal(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	n := c.Nodes[0]
	f := &faults.RestartFault{Delay: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Inject(ctx, n) }()
	rdb := testcluster.Client(t, n.Addr(), 100*time.Millisecond)
	if err := testcluster.Eventually(func() error {
		if rdb.Ping(context.Background()).Err() == nil {
			return errors.New("node still up")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Inject = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Inject ignored the cancelled context")
	}
	testcluster.Heal(t, f, n)
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
}
