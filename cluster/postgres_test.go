package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testpg"
)

// TestPostgres_PrimaryAndReplica starts a primary and a streaming replica,
// writes on the primary through its proxy and reads it on the replica,
// then kills and restarts the primary with its data, and promotes the
// replica. Start times are logged (docs/postgres.md), not asserted.
func TestPostgres_PrimaryAndReplica(t *testing.T) {
	c := testpg.Start(t, 2, false)
	ctx := context.Background()
	p1, p2 := c.Postgres[0], c.Postgres[1]
	pgExec(t, p1.Link.Addr(), "CREATE TABLE t (v int); INSERT INTO t VALUES (7)")
	if rec, err := cluster.PostgresInRecovery(ctx, p2, time.Second); err != nil || !rec {
		t.Fatalf("p2 in recovery = %v, %v; want a standby", rec, err)
	}
	if err := eventuallyPg(func() error { return query1(p2.Link.Addr(), "SELECT v FROM t") }); err != nil {
		t.Fatalf("p2 never read the primary's row: %v", err)
	}
	if err := p1.Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.PostgresPing(ctx, p1.Proc.Addr(), 300*time.Millisecond); err == nil {
		t.Fatal("killed p1 still answers")
	}
	if err := p1.Proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := query1(p1.Link.Addr(), "SELECT v FROM t"); err != nil {
		t.Fatalf("restarted p1 lost its row: %v", err)
	}
	if err := cluster.PostgresPromote(ctx, p2); err != nil {
		t.Fatal(err)
	}
	if rec, err := cluster.PostgresInRecovery(ctx, p2, time.Second); err != nil || rec {
		t.Fatalf("p2 in recovery = %v, %v after promotion", rec, err)
	}
}

// TestPostgres_Primary logs the start time of a primary alone, and checks
// that Close leaves neither the postmaster nor any backend running.
func TestPostgres_Primary(t *testing.T) {
	c := testpg.Start(t, 1, false)
	pgExec(t, c.Postgres[0].Link.Addr(), "SELECT 1")
	pid := c.Postgres[0].Proc.(cluster.PIDProc).PID()
	procs := append([]int{pid}, childrenOf(t, pid)...)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if alive(p) {
			t.Errorf("PostgreSQL process %d still alive after Close", p)
		}
	}
}

func pgExec(t *testing.T, addr, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := cluster.PostgresConnect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

func query1(addr, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := cluster.PostgresConnect(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var v int
	return conn.QueryRow(ctx, sql).Scan(&v)
}

func eventuallyPg(fn func() error) error {
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = fn(); err == nil {
			return nil
		}
	}
	return err
}
