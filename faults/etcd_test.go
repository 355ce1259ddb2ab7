package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testetcd"
)

// TestEtcdMember_ProcessFaults: kill, pause and restart (with and without
// its data) act on an etcd member and verify their effect there, without
// speaking RESP to it.
func TestEtcdMember_ProcessFaults(t *testing.T) {
	c := testetcd.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := c.Etcd[2]
	for _, tc := range []struct {
		f    faults.Fault
		want string
	}{
		{&faults.KillFault{}, "down"},
		{&faults.PauseFault{}, "frozen"},
		{&faults.RestartFault{}, "etcd /health true"},
		{&faults.RestartFault{Wipe: true}, "wiped"},
	} {
		if err := tc.f.Inject(ctx, n); err != nil {
			t.Fatalf("%s: inject: %v", faults.Describe(tc.f, n), err)
		}
		effect, err := faults.Verify(ctx, tc.f, n)
		if err != nil || !strings.Contains(effect, tc.want) {
			t.Errorf("%s: effect %q, %v; want %q", faults.Describe(tc.f, n), effect, err, tc.want)
		}
		if err := tc.f.Heal(ctx, n); err != nil {
			t.Fatalf("%s: heal: %v", faults.Describe(tc.f, n), err)
		}
		if err := c.WaitEtcdHealthy(ctx, 15*time.Second); err != nil {
			t.Fatalf("%s: not healthy after heal: %v", faults.Describe(tc.f, n), err)
		}
	}
	if _, err := faults.Verify(ctx, &faults.KillFault{}, n); !errors.Is(err, faults.ErrNoEffect) {
		t.Errorf("kill verified on a running member: err = %v, want ErrNoEffect", err)
	}
	// A wiped restart that never ran has no member id to compare with.
	if _, err := faults.Verify(ctx, &faults.RestartFault{Wipe: true}, n); !errors.Is(err, faults.ErrNoEffect) {
		t.Errorf("a wiped restart verified without one: err = %v, want ErrNoEffect", err)
	}
}

// TestRestart_EtcdLeaderVerifiesOnceReelected restarts the leader at
// once: the member says /health true only once the cluster has a leader
// again, an election away, and the restart's effect must wait for that
// (it was checked once, at once, and every leader restart proved nothing).
func TestRestart_EtcdLeaderVerifiesOnceReelected(t *testing.T) {
	c := testetcd.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.WaitEtcdHealthy(ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	leader, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := &faults.RestartFault{}
	if err := f.Inject(ctx, leader); err != nil {
		t.Fatalf("inject: %v", err)
	}
	if effect, err := faults.Verify(ctx, f, leader); err != nil || !strings.Contains(effect, "etcd /health true") {
		t.Errorf("restart of leader %s: effect %q, %v", leader.Name, effect, err)
	}
}

// TestPeerPartition_LeaderAloneStepsDown cuts the leader off from its
// peers: the fault verifies only while the cut holds, the other two elect
// a new leader, and after the heal the cluster is whole again.
func TestPeerPartition_LeaderAloneStepsDown(t *testing.T) {
	c := testetcd.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := &faults.PeerPartitionFault{}
	if _, err := faults.Verify(ctx, f, old); !errors.Is(err, faults.ErrNoEffect) {
		t.Fatalf("verified before the inject: %v", err)
	}
	if err := f.Inject(ctx, old); err != nil {
		t.Fatal(err)
	}
	effect, err := faults.Verify(ctx, f, old)
	if err != nil || !strings.HasPrefix(effect, "peer traffic cut between "+old.Name+" and ") {
		t.Fatalf("effect %q, %v", effect, err)
	}
	t.Log(effect)
	elect, cancelElect := context.WithTimeout(ctx, 10*time.Second)
	defer cancelElect()
	err = cluster.Poll(elect, func() error {
		if l, err := c.EtcdLeader(ctx); err != nil || l == old {
			return fmt.Errorf("leader %v (%v), want another than %s", l, err, old.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Heal(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := faults.Verify(ctx, f, old); !errors.Is(err, faults.ErrNoEffect) {
		t.Errorf("verified after the heal: %v", err)
	}
	if err := c.WaitEtcdHealthy(ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestPlace_EtcdMembers(t *testing.T) {
	topo := cluster.Topology{Etcd: 3}
	for _, tc := range []struct {
		kind, node string
		ok         bool
	}{
		{"kill", "e1", true}, {"restart", "e3", true}, {"pause", "", true},
		{"kill", "e4", false}, {"kill", "n1", false},
		{"clock-jump", "e1", false}, {"clock-rate", "", false}, {"power-loss", "e2", true},
		{"client-pause", "e1", false},
		{"peer-partition", "e2", true}, {"peer-partition", "", true},
	} {
		f, err := faults.NewFault(tc.kind, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := faults.Place(f, topo, tc.node); (err == nil) != tc.ok {
			t.Errorf("Place(%s, %q) = %v, want ok %v", tc.kind, tc.node, err, tc.ok)
		}
	}
}
