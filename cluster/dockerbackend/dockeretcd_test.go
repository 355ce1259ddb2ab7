package dockerbackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/dockerbackend"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testetcd"
)

// TestDockerBackend_Etcd starts 3 etcd members as containers, checks they
// elect a leader, that a kill of the leader stops its container alone
// (the other two elect a new leader), that a partition of the leader and a
// pause of a member and a restart without data work as on the process
// backend, and that Close removes the containers and the data directories.
func TestDockerBackend_Etcd(t *testing.T) {
	t.Parallel()
	testcluster.NeedDocker(t)
	testetcd.Require(t)
	dir := t.TempDir()
	b, err := dockerbackend.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := cluster.Start(ctx, b, cluster.Topology{Etcd: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	t.Logf("3 etcd members started on docker and healthy in %v", time.Since(t0).Round(time.Millisecond))
	label := "label=lockpick.run=" + b.ID()
	if got := dockerCLI(t, "ps", "-q", "--filter", label, "--filter", "status=running"); len(got) != 3 {
		t.Fatalf("running containers of the run: %v, want e1, e2, e3", got)
	}
	leader, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The leader's pid is its container's: the peer filters read its sockets.
	pid := leader.Proc.(cluster.PIDProc).PID()
	if got := dockerCLI(t, "inspect", "-f", "{{.State.Pid}}", "lockpick-"+b.ID()+"-"+leader.Name); !slices.Equal(got, []string{strconv.Itoa(pid)}) {
		t.Fatalf("%s: PID() = %d, its container's pid is %v", leader.Name, pid, got)
	}

	kill := &faults.KillFault{}
	testcluster.Inject(t, kill, leader)
	testcluster.VerifyOK(t, kill, leader, "down")
	if got := dockerCLI(t, "ps", "-q", "--filter", label, "--filter", "status=running"); len(got) != 2 {
		t.Fatalf("running containers after killing %s: %v, want the other 2", leader.Name, got)
	}
	if got := dockerCLI(t, "ps", "-a", "--filter", label, "--filter", "status=exited", "--format", "{{.Label \"lockpick.node\"}}"); !slices.Equal(got, []string{leader.Name}) {
		t.Fatalf("stopped containers after killing %s: %v, want its alone", leader.Name, got)
	}
	if err := testcluster.EventuallyWithin(6*time.Second, func() error {
		l, err := c.EtcdLeader(ctx)
		if err == nil && l == leader {
			t.Fatalf("killed %s still leads", leader.Name)
		}
		return err
	}); err != nil {
		t.Fatalf("no new leader after the kill: %v", err)
	}
	testcluster.Heal(t, kill, leader)
	if err := c.WaitEtcdHealthy(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// The peer filters tell the members apart by their containers' pids:
	// a partition of the leader makes the other two elect another.
	if leader, err = c.EtcdLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.PartitionEtcd(leader.Name); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.EventuallyWithin(8*time.Second, func() error {
		l, err := c.EtcdLeader(ctx)
		if err == nil && l == leader {
			return fmt.Errorf("%s, cut off, still leads", leader.Name)
		}
		return err
	}); err != nil {
		t.Fatalf("no new leader after the partition: %v", err)
	}
	if err := c.HealEtcdPartition(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitEtcdHealthy(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// A pause stops the member's etcd as SIGSTOP does on the process backend.
	n := c.Etcd[0]
	pause := &faults.PauseFault{}
	testcluster.Inject(t, pause, n)
	testcluster.VerifyOK(t, pause, n, "frozen (SIGSTOP)")
	testcluster.Heal(t, pause, n)
	if err := c.WaitEtcdHealthy(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// A restart without data replaces the member: a new container of a new
	// member id, joining the running cluster.
	fs, err := c.EtcdFollowers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wiped := &faults.RestartFault{Wipe: true}
	t1 := time.Now()
	testcluster.Inject(t, wiped, fs[0])
	testcluster.VerifyOK(t, wiped, fs[0], "back up", "wiped")
	t.Logf("%s wiped and replaced in %v", fs[0].Name, time.Since(t1).Round(time.Millisecond))
	if got := dockerCLI(t, "ps", "-q", "--filter", label, "--filter", "status=running"); len(got) != 3 {
		t.Fatalf("running containers after the wiped restart: %v, want 3", got)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dockerCLI(t, "ps", "-a", "-q", "--filter", label); len(got) != 0 {
		t.Errorf("containers left after Close: %v", got)
	}
	if data, _ := filepath.Glob(filepath.Join(dir, "e*", "data")); len(data) != 0 {
		t.Errorf("data directories left after Close: %v", data)
	}
	if log, err := os.ReadFile(filepath.Join(dir, leader.Name+".log")); err != nil || len(log) == 0 {
		t.Errorf("%s's log after Close: %d bytes, %v", leader.Name, len(log), err)
	}
}
