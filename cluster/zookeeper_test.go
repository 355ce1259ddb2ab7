package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testzk"
)

// TestZooKeeper_Ensemble starts three members (the start time is logged,
// docs/zookeeper.md, not asserted), writes a znode through z1's proxy and
// reads it through z3's, then kills the leader (the others elect one),
// restarts it, restarts a follower without its data (it learns the znode
// from the leader). Close leaves no JVM.
func TestZooKeeper_Ensemble(t *testing.T) {
	c := testzk.Start(t, 3, false)
	if v := cluster.ZooKeeperVersion(); !strings.HasPrefix(v, "3.") {
		t.Errorf("ZooKeeperVersion() = %q, want 3.x", v)
	}
	ctx := context.Background()
	checkZooKeeperClock(t, c.ZooKeeper[1])
	zkCreate(t, c.ZooKeeper[0].Link.Addr(), "/t", "7")
	if got := zkGet(t, c.ZooKeeper[2].Link.Addr(), "/t"); got != "7" {
		t.Fatalf("z3 read %q, want 7", got)
	}
	leader, err := c.ZooKeeperLeader()
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ZooKeeperServing(leader, 300*time.Millisecond); err == nil {
		t.Fatalf("killed leader %s still answers", leader.Name)
	}
	t0 := time.Now()
	next := eventuallyLeader(t, c)
	t.Logf("leader %s killed: %s leads after %v", leader.Name, next.Name, time.Since(t0).Round(time.Millisecond))
	if next == leader {
		t.Fatalf("killed %s still leads", leader.Name)
	}
	if err := leader.Proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitZooKeeperServing(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	var follower *cluster.Node
	for _, n := range c.ZooKeeper {
		if n != next {
			follower = n
		}
	}
	if err := follower.Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := follower.Proc.WipeData(); err != nil {
		t.Fatal(err)
	}
	if err := follower.Proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitZooKeeperServing(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := zkGet(t, follower.Link.Addr(), "/t"); got != "7" {
		t.Fatalf("wiped %s read %q after its restart, want 7", follower.Name, got)
	}

	var pids []int
	for _, n := range c.ZooKeeper {
		pids = append(pids, n.Proc.(cluster.PIDProc).PID())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("ZooKeeper JVM %d still alive after Close", p)
		}
	}
}

// checkZooKeeperClock reads member n's wall clock (not under the clock
// shim: true time) with ZooKeeperClock: the stamp falls between the
// host's readings around it, give or take the stamp's millisecond.
func checkZooKeeperClock(t *testing.T, n *cluster.Node) {
	t.Helper()
	est, from, to, err := cluster.ZooKeeperClock(n, 5*time.Second)
	if err != nil {
		t.Fatalf("ZooKeeperClock(%s): %v", n.Name, err)
	}
	if est.Before(from.Add(-time.Millisecond)) || est.After(to) {
		t.Errorf("ZooKeeperClock(%s) = %v, want it between %v and %v", n.Name, est, from, to)
	}
	t.Logf("ZooKeeperClock(%s): read in %v", n.Name, to.Sub(from).Round(time.Millisecond))
}

// TestZooKeeper_Topology refuses ensembles of other sizes and the
// docker backend's kind of topology mix.
func TestZooKeeper_Topology(t *testing.T) {
	b, err := cluster.NewProcessBackend(t.TempDir())
	if err != nil {
		t.Skip(err)
	}
	for _, topo := range []cluster.Topology{{ZooKeeper: 2}, {ZooKeeper: 3, Masters: 1}, {ZooKeeper: 7}} {
		if _, err := cluster.Start(context.Background(), b, topo); err == nil {
			t.Errorf("Start(%+v) = nil error, want ErrBadTopology", topo)
		}
	}
}

func eventuallyLeader(t *testing.T, c *cluster.Cluster) *cluster.Node {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var l *cluster.Node
		if l, err = c.ZooKeeperLeader(); err == nil {
			return l
		}
	}
	t.Fatal(err)
	return nil
}

func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func zkCreate(t *testing.T, addr, path, v string) {
	t.Helper()
	if _, err := zkConn(t, addr).Create(path, []byte(v), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s on %s: %v", path, addr, err)
	}
}

func zkGet(t *testing.T, addr, path string) string {
	t.Helper()
	b, _, err := zkConn(t, addr).Get(path)
	if err != nil {
		t.Fatalf("get %s on %s: %v", path, addr, err)
	}
	return string(b)
}
