package faults_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// verifyAbsent checks that Verify reports f's effect on n as absent.
func verifyAbsent(tb testing.TB, f faults.Fault, n *cluster.Node) {
	tb.Helper()
	got, err := faults.Verify(context.Background(), f, n)
	if !errors.Is(err, faults.ErrNoEffect) {
		tb.Fatalf("Verify %s = %q, %v; want ErrNoEffect", faults.Describe(f, n), got, err)
	}
	tb.Logf("Verify %s: %v", faults.Describe(f, n), err)
}

// noVerify is a fault without Verify.
type noVerify struct{}

func (noVerify) Inject(context.Context, *cluster.Node) error { return nil }
func (noVerify) Heal(context.Context, *cluster.Node) error   { return nil }

func TestVerify_NotAVerifier(t *testing.T) {
	t.Parallel()
	if got, err := faults.Verify(context.Background(), noVerify{}, nil); got != "" || err != nil {
		t.Fatalf("Verify = %q, %v; want \"\", nil", got, err)
	}
}

func TestKillFault_Verify(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	n := c.Nodes[0]
	f := &faults.KillFault{}
	verifyAbsent(t, f, n) // running
	testcluster.Inject(t, f, n)
	if got := testcluster.VerifyOK(t, f, n); got != "down" {
		t.Fatalf("Verify = %q, want down", got)
	}
	testcluster.Heal(t, f, n)
	verifyAbsent(t, f, n)
}

func TestRestartFault_Verify(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	n := c.Nodes[0]
	f := &faults.RestartFault{Wipe: true}
	testcluster.Inject(t, &faults.KillFault{}, n)
	verifyAbsent(t, f, n) // still down
	testcluster.Inject(t, f, n)
	testcluster.VerifyOK(t, f, n, "back up", ", wiped (its start loaded nothing from disk)")
	testcluster.Heal(t, f, n)

	// A restart that kept the node's RDB is no wiped restart.
	rdb := testcluster.Client(t, n.Addr())
	if err := rdb.Set(context.Background(), "kept", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Save(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	testcluster.Inject(t, &faults.RestartFault{}, n)
	verifyAbsent(t, f, n)
}

// hidePID hides a process's PID, as a container's would be.
type hidePID struct{ cluster.Proc }

func TestPauseFault_Verify(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	n := c.Nodes[0]
	other := &cluster.Node{Name: n.Name, Proc: hidePID{n.Proc}}
	f := &faults.PauseFault{}
	verifyAbsent(t, f, n)
	verifyAbsent(t, f, other)
	testcluster.Inject(t, f, n)
	t.Cleanup(func() { testcluster.Heal(t, f, n) })
	testcluster.VerifyOK(t, f, n, "frozen (SIGSTOP)")
	testcluster.VerifyOK(t, f, other, "frozen", "PING")
	testcluster.Heal(t, f, n)
	verifyAbsent(t, f, n)
	testcluster.Inject(t, &faults.KillFault{}, n)
	verifyAbsent(t, f, n) // down is not frozen
	verifyAbsent(t, f, other)
}

func TestProcessPauseFault_Verify(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep(1):", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	f := &faults.ProcessPauseFault{PID: cmd.Process.Pid}
	verifyAbsent(t, f, nil)
	testcluster.Inject(t, f, nil)
	testcluster.VerifyOK(t, f, nil, "frozen (SIGSTOP)")
	testcluster.Heal(t, f, nil)
	verifyAbsent(t, f, nil)
	if _, err := faults.Verify(context.Background(), &faults.ProcessPauseFault{}, nil); !errors.Is(err, cluster.ErrBadFault) {
		t.Fatalf("Verify pid 0: err=%v, want ErrBadFault", err)
	}
}

// TestNetworkFaults_Verify checks every proxy fault on one cluster, one
// after the other: absent before Inject, seen after, absent after Heal.
func TestNetworkFaults_Verify(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
	replica := c.Nodes[1]
	for _, tc := range []struct {
		fault faults.Fault
		want  string
	}{
		{&faults.PartitionFault{}, "client link black-holed both ways"},
		{&faults.PartitionFault{Direction: faults.ToNode}, "client link black-holed to-node"},
		{&faults.PartitionFault{Direction: faults.FromNode}, "client link black-holed from-node"},
		{&faults.PartitionFault{Refuse: true}, "client link cut"},
		{&faults.PartitionFault{Link: faults.ReplicationLink}, "repl link black-holed both ways"},
		{&faults.LatencyFault{Latency: 1500 * time.Millisecond, Direction: faults.ToNode}, "toxic latency 1500ms to-node installed"},
		{&faults.LatencyFault{Latency: 200 * time.Millisecond, Jitter: 50 * time.Millisecond}, "toxic latency 200ms±50ms both installed"},
		{&faults.LatencyFault{Latency: time.Millisecond, Link: faults.ReplicationLink}, "toxic latency 1ms both installed on the repl link"},
		{&faults.DropRepliesFault{}, "toxic timeout from-node installed"},
		{&faults.ResetFault{}, "toxic reset_peer to-node installed"},
		{&faults.CutReplicationFault{}, "replication link cut"},
	} {
		t.Run(faults.Describe(tc.fault, replica), func(t *testing.T) {
			verifyAbsent(t, tc.fault, replica)
			testcluster.Inject(t, tc.fault, replica)
			testcluster.VerifyOK(t, tc.fault, replica, tc.want)
			testcluster.Heal(t, tc.fault, replica)
			testcluster.Heal(t, tc.fault, replica) // healing twice is no error
			verifyAbsent(t, tc.fault, replica)
		})
	}
}

func TestLatencyFault_VerifyOtherLatency(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	n := c.Nodes[0]
	slow := &faults.LatencyFault{Latency: 1500 * time.Millisecond}
	testcluster.Inject(t, slow, n)
	t.Cleanup(func() { testcluster.Heal(t, slow, n) })
	// Injecting a second latency keeps the first toxic: its effect is absent.
	fast := &faults.LatencyFault{Latency: 200 * time.Millisecond}
	testcluster.Inject(t, fast, n)
	verifyAbsent(t, fast, n)
	// Another direction's toxic is not this fault's either.
	verifyAbsent(t, &faults.DropRepliesFault{}, n)
}

func TestClockJumpFault_Verify(t *testing.T) {
	t.Parallel()
	c := startClockCluster(t, cluster.Topology{Masters: 2})
	n1, n2 := c.Nodes[0], c.Nodes[1]
	f := &faults.ClockJumpFault{Offset: 5 * time.Second}
	verifyAbsent(t, f, n1) // no jump yet
	testcluster.Inject(t, f, n1)
	checkReadBack(t, testcluster.VerifyOK(t, f, n1, "(read back with TIME)"), f.Offset)
	testcluster.Heal(t, f, n1)
	verifyAbsent(t, f, n1) // reset

	back := &faults.ClockJumpFault{Offset: -30 * time.Second}
	testcluster.Inject(t, back, n1)
	t.Cleanup(func() { testcluster.Heal(t, back, n1) })
	checkReadBack(t, testcluster.VerifyOK(t, back, n1, "(read back with TIME)"), back.Offset)

	// A node whose Clock moved but whose process does not read it, as
	// without the shim: TIME shows true time.
	unshimmed := &cluster.Node{Name: "n2", Proc: clockedAs{n2.Proc, c.Nodes[0]}}
	verifyAbsent(t, back, unshimmed)
}

// checkReadBack checks that a clock-jump Verify description such as
// "clock +5.001s (read back with TIME)" gives an offset within 250ms of want.
func checkReadBack(tb testing.TB, effect string, want time.Duration) {
	tb.Helper()
	checkReadBackWithin(tb, effect, want, 250*time.Millisecond)
}

// checkReadBackWithin is checkReadBack within tol.
func checkReadBackWithin(tb testing.TB, effect string, want, tol time.Duration) {
	tb.Helper()
	s, ok := strings.CutPrefix(effect, "clock ")
	s, _, ok2 := strings.Cut(s, " ")
	got, err := time.ParseDuration(strings.TrimPrefix(s, "+"))
	if !ok || !ok2 || err != nil {
		tb.Fatalf("effect %q does not read \"clock <offset> (...)\": %v", effect, err)
	}
	if (got - want).Abs() > tol {
		tb.Fatalf("effect %q: read back %v, want %v ±%v", effect, got, want, tol)
	}
}

// clockedAs is a process that reports another node's clock as its own.
type clockedAs struct {
	cluster.Proc
	of *cluster.Node
}

func (p clockedAs) Clock() *cluster.Clock { return p.of.Proc.(cluster.ClockedProc).Clock() }

func TestClockRateFault_Verify(t *testing.T) {
	t.Parallel()
	c := startClockCluster(t, cluster.Topology{})
	n := c.Nodes[0]
	f := &faults.ClockRateFault{Rate: 2}
	verifyAbsent(t, f, n)
	testcluster.Inject(t, f, n)
	t.Cleanup(func() { testcluster.Heal(t, f, n) })
	got := testcluster.VerifyOK(t, f, n, "(read back with TIME)")
	s, _ := strings.CutPrefix(got, "clock rate ×")
	s, _, _ = strings.Cut(s, " ")
	if rate, err := strconv.ParseFloat(s, 64); err != nil || rate < 1.7 || rate > 2.3 {
		t.Fatalf("Verify = %q, want \"clock rate ×<rate> (...)\" with a rate of 2 ±15%%", got)
	}
	testcluster.Heal(t, f, n)
	verifyAbsent(t, f, n)
}

func TestPromoteFault_Verify(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1})
	n2 := c.Nodes[1]
	f := &faults.PromoteFault{Demote: true}
	verifyAbsent(t, f, n2) // still a replica
	testcluster.Inject(t, f, n2)
	if got := testcluster.VerifyOK(t, f, n2); got != "role master" {
		t.Fatalf("Verify = %q, want role master", got)
	}
	verifyAbsent(t, f, c.Nodes[0]) // the demoted master
}

func TestSentinelFailoverFault_Verify(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Replicas: 1, Sentinels: 3})
	n1 := c.Nodes[0]
	f := &faults.SentinelFailoverFault{Timeout: 15 * time.Second}
	verifyAbsent(t, f, n1)
	testcluster.Inject(t, f, n1)
	testcluster.VerifyOK(t, f, n1, "sentinels now name n2 master")
}

// TestDockerBackend_Verify checks the process faults' Verify on containers,
// whose processes Verify cannot look up by pid.
func TestDockerBackend_Verify(t *testing.T) {
	t.Parallel()
	c, _ := testcluster.StartDocker(t, cluster.Topology{}, true)
	n := c.Nodes[0]
	pause := &faults.PauseFault{}
	verifyAbsent(t, pause, n)
	testcluster.Inject(t, pause, n)
	t.Cleanup(func() { testcluster.Heal(t, pause, n) })
	testcluster.VerifyOK(t, pause, n, "frozen (no reply to PING in 150ms)")
	testcluster.Heal(t, pause, n)
	verifyAbsent(t, pause, n)

	jump := &faults.ClockJumpFault{Offset: -10 * time.Second}
	testcluster.Inject(t, jump, n)
	checkReadBack(t, testcluster.VerifyOK(t, jump, n), jump.Offset)
	testcluster.Heal(t, jump, n)
	verifyAbsent(t, jump, n)

	kill := &faults.KillFault{}
	testcluster.Inject(t, kill, n)
	testcluster.VerifyOK(t, kill, n, "down")
	testcluster.Heal(t, kill, n)
	verifyAbsent(t, kill, n)
}
