package dockerbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/dockerbackend"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testzk"
)

// TestDockerBackend_ZooKeeper starts a 3-member ensemble as containers
// (the image build and the start are logged, docs/zookeeper.md), writes a
// znode through z1's proxy and reads it through z3's, kills the leader
// (its container alone stops, the other two elect a leader), restarts it
// (a new container, which serves again and loaded the ensemble's state),
// pauses a member (its JVM is stopped, SIGSTOP) and resumes it, and checks
// that Close leaves no container and no data directory, and the logs.
func TestDockerBackend_ZooKeeper(t *testing.T) {
	t.Parallel()
	testcluster.NeedDocker(t)
	testzk.Require(t)
	dir := t.TempDir()
	b, err := dockerbackend.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	// Liveness bounds for a loaded machine, not performance targets: the
	// first build of the image reads near 200 MB.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	ref, err := dockerbackend.BuildZooKeeperImage(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s built or found in %v", ref, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	c, err := cluster.Start(ctx, b, cluster.Topology{ZooKeeper: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	t.Logf("3 ZooKeeper members started on docker and serving in %v", time.Since(t0).Round(time.Millisecond))
	label := "label=lockpick.run=" + b.ID()
	if got := dockerCLI(t, "ps", "-q", "--filter", label, "--filter", "status=running"); len(got) != 3 {
		t.Fatalf("running containers of the run: %v, want z1, z2, z3", got)
	}
	zkWrite(t, c.ZooKeeper[0].Link.Addr(), "/t", "7")
	if got := zkRead(t, c.ZooKeeper[2].Link.Addr(), "/t"); got != "7" {
		t.Fatalf("z3 read %q, want 7", got)
	}

	leader, err := c.ZooKeeperLeader()
	if err != nil {
		t.Fatal(err)
	}
	// The member's pid is its container's JVM: a pause's check reads it.
	pid := leader.Proc.(cluster.PIDProc).PID()
	if got := dockerCLI(t, "inspect", "-f", "{{.State.Pid}}", "lockpick-"+b.ID()+"-"+leader.Name); !slices.Equal(got, []string{strconv.Itoa(pid)}) {
		t.Fatalf("%s: PID() = %d, its container's pid is %v", leader.Name, pid, got)
	}
	kill := &faults.KillFault{}
	testcluster.Inject(t, kill, leader)
	testcluster.VerifyOK(t, kill, leader, "down")
	if got := dockerCLI(t, "ps", "-a", "--filter", label, "--filter", "status=exited", "--format", "{{.Label \"lockpick.node\"}}"); !slices.Equal(got, []string{leader.Name}) {
		t.Fatalf("stopped containers after killing %s: %v, want its alone", leader.Name, got)
	}
	t1 := time.Now()
	if err := testcluster.EventuallyWithin(time.Minute, func() error {
		l, err := c.ZooKeeperLeader()
		if err == nil && l == leader {
			t.Fatalf("killed %s still leads", leader.Name)
		}
		return err
	}); err != nil {
		t.Fatalf("no new leader after the kill: %v", err)
	}
	t.Logf("leader %s killed: a new leader after %v", leader.Name, time.Since(t1).Round(time.Millisecond))
	restart := &faults.RestartFault{}
	testcluster.Inject(t, restart, leader)
	testcluster.VerifyOK(t, restart, leader, "back up (serves as ")
	if err := c.WaitZooKeeperServing(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := zkRead(t, leader.Link.Addr(), "/t"); got != "7" {
		t.Fatalf("restarted %s read %q, want 7", leader.Name, got)
	}
	// The log is the JVM's output, copied from the container as it comes.
	if zxid, err := cluster.ZooKeeperLoadedZxid(leader.Proc.LogPath()); err != nil || zxid == "0x0" {
		t.Errorf("restarted %s loaded zxid %q, %v; want the ensemble's", leader.Name, zxid, err)
	}

	n := c.ZooKeeper[0]
	pause := &faults.PauseFault{}
	testcluster.Inject(t, pause, n)
	testcluster.VerifyOK(t, pause, n, "frozen (SIGSTOP)")
	testcluster.Heal(t, pause, n)
	if err := c.WaitZooKeeperServing(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := zkRead(t, n.Link.Addr(), "/t"); got != "7" {
		t.Fatalf("resumed %s read %q, want 7", n.Name, got)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dockerCLI(t, "ps", "-a", "-q", "--filter", label); len(got) != 0 {
		t.Errorf("containers left after Close: %v", got)
	}
	if data, _ := filepath.Glob(filepath.Join(dir, "z*", "data")); len(data) != 0 {
		t.Errorf("data directories left after Close: %v", data)
	}
	if log, err := os.ReadFile(leader.Proc.LogPath()); err != nil || !strings.Contains(string(log), "QuorumPeerMain") {
		t.Errorf("%s's log after Close: %d bytes, %v; want the JVM's output", leader.Name, len(log), err)
	}
}

// TestDockerBackend_ZooKeeperPowerLoss cuts a lone member's power on a
// lazy disk seen through the container's bind mount: it comes back and
// serves.
func TestDockerBackend_ZooKeeperPowerLoss(t *testing.T) {
	t.Parallel()
	testcluster.NeedDocker(t)
	testzk.Require(t)
	testcluster.RequireLazyDisks(t)
	b, err := dockerbackend.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b.LazyDisks = true
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, b, cluster.Topology{ZooKeeper: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	n := c.ZooKeeper[0]
	zkWrite(t, n.Link.Addr(), "/t", "7")
	pl := &faults.PowerLossFault{}
	testcluster.Inject(t, pl, n)
	testcluster.VerifyOK(t, pl, n, "back up, ")
	testcluster.Heal(t, pl, n)
	if got := zkRead(t, n.Link.Addr(), "/t"); got != "7" {
		t.Fatalf("%s read %q after its power loss, want 7 (ZooKeeper fsyncs before it acknowledges)", n.Name, got)
	}
}

func zkSession(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func zkWrite(t *testing.T, addr, path, v string) {
	t.Helper()
	if _, err := zkSession(t, addr).Create(path, []byte(v), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s on %s: %v", path, addr, err)
	}
}

func zkRead(t *testing.T, addr, path string) string {
	t.Helper()
	b, _, err := zkSession(t, addr).Get(path)
	if err != nil {
		t.Fatalf("get %s on %s: %v", path, addr, err)
	}
	return string(b)
}
