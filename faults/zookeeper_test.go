package faults_test

import (
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testzk"
)

// TestZooKeeper_ProcessFaults injects kill, restart (with and without its
// data) and pause on the members of a 3-member ensemble and checks each
// effect with its Verify; a clock jump on a member started without the
// clock shim is ErrNoClock.
func TestZooKeeper_ProcessFaults(t *testing.T) {
	c := testzk.Start(t, 3, false)
	z1, z2 := c.ZooKeeper[0], c.ZooKeeper[1]
	for _, tc := range []struct {
		f    faults.Fault
		n    *cluster.Node
		want string
	}{
		{&faults.KillFault{}, z1, "down"},
		{&faults.RestartFault{}, z1, "back up (serves as "},
		{&faults.RestartFault{Wipe: true}, z2, "back up (serves as "},
		{&faults.PauseFault{}, z2, "frozen (SIGSTOP)"},
	} {
		injectVerify(t, tc.f, tc.n, tc.want)
	}
	needsShim(t, c.ZooKeeper[2])
}

// TestZooKeeper_PowerLoss cuts a lone member's power on a lazy disk: it
// comes back and serves.
func TestZooKeeper_PowerLoss(t *testing.T) {
	testcluster.RequireLazyDisks(t)
	c := testzk.Start(t, 1, true)
	injectVerify(t, &faults.PowerLossFault{}, c.ZooKeeper[0], "back up, ")
}

// TestZooKeeper_Place accepts z1..zN for process faults and refuses what
// cannot act on ZooKeeper members (a peer partition among them).
func TestZooKeeper_Place(t *testing.T) {
	topo := cluster.Topology{ZooKeeper: 3}
	for _, tc := range []struct {
		f    faults.Fault
		node string
		ok   bool
	}{
		{&faults.KillFault{}, "z1", true},
		{&faults.RestartFault{Wipe: true}, "z3", true},
		{&faults.PauseFault{}, "z2", true},
		{&faults.PowerLossFault{}, "z1", true},
		{&faults.PeerPartitionFault{}, "z1", false},
		{&faults.KillFault{}, "z4", false},
		{&faults.KillFault{}, "n1", false},
		{&faults.PromoteFault{}, "z2", false},
		{&faults.ClockJumpFault{}, "z1", true},
		{&faults.ClockRateFault{}, "z1", false},
	} {
		if err := faults.Place(tc.f, topo, tc.node); (err == nil) != tc.ok {
			t.Errorf("Place(%s, %s) = %v, want ok %v", faults.Describe(tc.f, nil), tc.node, err, tc.ok)
		}
	}
}

// TestZooKeeper_ClockJump jumps a lone member's wall clock (its JVM under
// the clock shim) an hour forward: the read-back (cons: when the member
// accepted a connection) shows it, the member still serves, and once the
// clock is back on true time the same read-back is no effect.
func TestZooKeeper_ClockJump(t *testing.T) {
	t.Parallel()
	c := testzk.StartClocked(t, 1, clockShim)
	checkClockJump(t, c.ZooKeeper[0], "(read back with cons: ")
	if _, err := cluster.ZooKeeperServing(c.ZooKeeper[0], 2*time.Second); err != nil {
		t.Errorf("z1 after its clock jumped and came back: %v", err)
	}
}
