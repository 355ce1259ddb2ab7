package faults_test

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestPartitionFault_FromClients(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Masters: 4})
	for i, tc := range []struct {
		fault       *faults.PartitionFault
		wantApplied bool // whether a SET sent during the partition reaches Redis
		wantTimeout bool // whether the client times out (else: is refused)
	}{
		{&faults.PartitionFault{}, false, true},
		{&faults.PartitionFault{Direction: faults.ToNode}, false, true},
		{&faults.PartitionFault{Direction: faults.FromNode}, true, true},
		{&faults.PartitionFault{Refuse: true}, false, false},
	} {
		n := c.Nodes[i]
		t.Run(faults.Describe(tc.fault, n), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb := testcluster.Client(t, n.Addr(), 300*time.Millisecond)
			direct := testcluster.Client(t, n.Proc.Addr())
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			testcluster.Inject(t, tc.fault, n)
			testcluster.Inject(t, tc.fault, n) // a second inject is harmless
			err := rdb.Set(ctx, "k", "v", 0).Err()
			switch {
			case err == nil:
				t.Fatal("SET succeeded across the partition")
			case tc.wantTimeout && !testcluster.IsTimeout(err):
				t.Fatalf("SET err = %v, want a timeout", err)
			case !tc.wantTimeout && !closedAtOnce(err):
				t.Fatalf("SET err = %v, want connection refused (or, on the pooled connection the fault closed, EOF)", err)
			}
			applied := direct.Get(ctx, "k").Err() == nil
			if applied != tc.wantApplied {
				t.Fatalf("SET applied = %v, want %v", applied, tc.wantApplied)
			}
			testcluster.Heal(t, tc.fault, n)
			testcluster.Heal(t, tc.fault, n)
			if err := testcluster.Eventually(func() error { return rdb.Set(ctx, "k2", "v", 0).Err() }); err != nil {
				t.Fatalf("SET after heal: %v", err)
			}
		})
	}
}

func TestPartitionFault_ReplicaFromMaster(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
	ctx := context.Background()
	master, replica := c.Nodes[0], c.Nodes[1]
	mc, rc := testcluster.Client(t, master.Addr()), testcluster.Client(t, replica.Addr())
	f := &faults.PartitionFault{Link: faults.ReplicationLink}
	testcluster.Inject(t, f, replica)
	if err := mc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT blocks up to 200ms for the replica's ack, which cannot come.
	if acks, err := mc.Wait(ctx, 1, 200*time.Millisecond).Result(); err != nil || acks != 0 {
		t.Fatalf("WAIT = %d, %v; want 0 replicas reached", acks, err)
	}
	if err := rc.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("replica GET k: err=%v, want redis.Nil", err)
	}
	// Clients still reach both nodes.
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	testcluster.Heal(t, f, replica)
	if err := testcluster.Eventually(func() error { return rc.Get(ctx, "k").Err() }); err != nil {
		t.Fatalf("replica never caught up after heal: %v", err)
	}
}

func TestPartitionFault_BadParameters(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	ctx := context.Background()
	for _, tc := range []struct {
		f    *faults.PartitionFault
		want error
	}{
		{&faults.PartitionFault{Link: faults.ReplicationLink}, cluster.ErrNoLink},
		{&faults.PartitionFault{Direction: "sideways"}, cluster.ErrBadFault},
		{&faults.PartitionFault{Direction: faults.ToNode, Refuse: true}, cluster.ErrBadFault},
	} {
		if err := tc.f.Inject(ctx, c.Nodes[0]); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", faults.Describe(tc.f, nil), err, tc.want)
		}
	}
}

// closedAtOnce reports whether err is what a client sees from a refusing
// partition: a refused dial, or the end of a pooled connection the fault
// closed before the pool noticed.
func closedAtOnce(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}
