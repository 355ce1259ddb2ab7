package faults_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testpg"
)

// TestPostgres_ProcessFaults injects kill, restart, pause and promote on
// PostgreSQL nodes and checks each effect with its Verify; a clock jump on
// a node started without the clock shim is ErrNoClock.
func TestPostgres_ProcessFaults(t *testing.T) {
	c := testpg.Start(t, 2, false)
	p1, p2 := c.Postgres[0], c.Postgres[1]
	for _, tc := range []struct {
		f    faults.Fault
		n    *cluster.Node
		want string
	}{
		{&faults.KillFault{}, p1, "down"},
		{&faults.RestartFault{}, p1, "back up (answers SELECT 1)"},
		{&faults.PauseFault{}, p1, "frozen (SIGSTOP)"},
		{&faults.PromoteFault{}, p2, "primary (pg_is_in_recovery false)"},
	} {
		injectVerify(t, tc.f, tc.n, tc.want)
	}
	needsShim(t, p2)
}

// needsShim checks that a clock jump on n, started without the clock
// shim, is ErrNoClock, and that Verify says so too.
func needsShim(t *testing.T, n *cluster.Node) {
	t.Helper()
	ctx := context.Background()
	f := &faults.ClockJumpFault{Offset: time.Hour}
	if err := f.Inject(ctx, n); !errors.Is(err, cluster.ErrNoClock) {
		t.Errorf("inject %s = %v, want ErrNoClock", faults.Describe(f, n), err)
	}
	if _, err := faults.Verify(ctx, f, n); !errors.Is(err, cluster.ErrNoClock) {
		t.Errorf("verify %s = %v, want ErrNoClock", faults.Describe(f, n), err)
	}
}

// TestPostgres_PowerLoss cuts a primary's power on a lazy disk: it comes
// back, and a committed row (PostgreSQL fsyncs its WAL) is still there.
func TestPostgres_PowerLoss(t *testing.T) {
	testcluster.RequireLazyDisks(t)
	c := testpg.Start(t, 1, true)
	p1 := c.Postgres[0]
	ctx := context.Background()
	conn, err := cluster.PostgresConnect(ctx, p1.Link.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	injectVerify(t, &faults.PowerLossFault{}, p1, "back up, ")
	conn, err = cluster.PostgresConnect(ctx, p1.Link.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 1 {
		t.Fatalf("committed row after power loss: %v, %v; want 1", v, err)
	}
}

// TestPostgres_Place accepts p1/p2 for process faults and refuses what
// cannot act on PostgreSQL nodes.
func TestPostgres_Place(t *testing.T) {
	topo := cluster.Topology{Postgres: 2}
	for _, tc := range []struct {
		f    faults.Fault
		node string
		ok   bool
	}{
		{&faults.KillFault{}, "p1", true},
		{&faults.PauseFault{}, "p2", true},
		{&faults.PowerLossFault{}, "p1", true},
		{&faults.KillFault{}, "n1", false},
		{&faults.PromoteFault{}, "p2", true},
		{&faults.PromoteFault{}, "p1", false},
		{&faults.RestartFault{Wipe: true}, "p1", false},
		{&faults.ClockJumpFault{}, "p1", true},
		{&faults.ClockRateFault{}, "p1", false},
	} {
		if err := faults.Place(tc.f, topo, tc.node); (err == nil) != tc.ok {
			t.Errorf("Place(%s, %s) = %v, want ok %v", faults.Describe(tc.f, nil), tc.node, err, tc.ok)
		}
	}
}

func injectVerify(t *testing.T, f faults.Fault, n *cluster.Node, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Inject(ctx, n); err != nil {
		t.Fatalf("inject %s: %v", faults.Describe(f, n), err)
	}
	got, err := faults.Verify(ctx, f, n)
	if err != nil || !strings.HasPrefix(got, want) {
		t.Errorf("verify %s = %q, %v; want %q", faults.Describe(f, n), got, err, want)
	}
	if err := f.Heal(ctx, n); err != nil {
		t.Fatalf("heal %s: %v", faults.Describe(f, n), err)
	}
}

// TestPostgres_LinkFaults cuts and delays a PostgreSQL node's client link:
// each is verified on the link, a query through it fails while refused and
// answers again once healed.
func TestPostgres_LinkFaults(t *testing.T) {
	c := testpg.Start(t, 1, false)
	p1 := c.Postgres[0]
	ctx := context.Background()
	injectVerify(t, &faults.LatencyFault{Latency: 50 * time.Millisecond}, p1, "toxic latency")
	cut := &faults.PartitionFault{Refuse: true}
	if err := cut.Inject(ctx, p1); err != nil {
		t.Fatal(err)
	}
	if _, err := faults.Verify(ctx, cut, p1); err != nil {
		t.Fatal(err)
	}
	if err := cluster.PostgresPing(ctx, p1.Link.Addr(), time.Second); err == nil {
		t.Error("a query through the refused link was answered")
	}
	if err := cut.Heal(ctx, p1); err != nil {
		t.Fatal(err)
	}
	if err := cluster.PostgresPing(ctx, p1.Link.Addr(), 5*time.Second); err != nil {
		t.Errorf("no answer through the healed link: %v", err)
	}
}

// TestPostgres_ClockJump jumps a server's wall clock (its postmaster under
// the clock shim) an hour forward: a backend forked after the jump reads
// it with clock_timestamp() (Verify), and so does one forked before it (a
// client's session: the mapping of the clock file is shared); once the
// clock is back on true time the same read-back is no effect.
func TestPostgres_ClockJump(t *testing.T) {
	t.Parallel()
	c := testpg.StartClocked(t, 1, clockShim)
	p1 := c.Postgres[0]
	ctx := context.Background()
	conn, err := cluster.PostgresConnect(ctx, p1.Proc.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	offset := func() time.Duration {
		t.Helper()
		var srv time.Time
		if err := conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&srv); err != nil {
			t.Fatal(err)
		}
		return time.Until(srv)
	}
	if off := offset(); off.Abs() > time.Second {
		t.Fatalf("the older backend's clock is %v off before the jump, want ±1s", off)
	}
	checkClockJump(t, p1, "(read back with clock_timestamp())", func() {
		if off := offset(); (off - time.Hour).Abs() > time.Second {
			t.Errorf("the backend forked before the jump reads its clock %v off, want +1h ±1s", off)
		}
	})
}

// checkClockJump jumps n's clock an hour forward and checks that Verify
// reads the jump back (said with how; within a second: a loaded machine
// widens a read's round trip, which Verify allows half of), runs each of
// alsoJumped while the clock is ahead, then heals it and checks that
// Verify, reading true time, says the jump had no effect.
func checkClockJump(t *testing.T, n *cluster.Node, how string, alsoJumped ...func()) {
	t.Helper()
	ctx := context.Background()
	f := &faults.ClockJumpFault{Offset: time.Hour}
	testcluster.Inject(t, f, n)
	checkReadBackWithin(t, testcluster.VerifyOK(t, f, n, how), f.Offset, time.Second)
	for _, check := range alsoJumped {
		check()
	}
	testcluster.Heal(t, f, n)
	if got, err := faults.Verify(ctx, f, n); !errors.Is(err, faults.ErrNoEffect) {
		t.Errorf("verify after heal = %q, %v; want ErrNoEffect (the clock shows true time)", got, err)
	}
}
