package dockerbackend_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/dockerbackend"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testredis"
)

// dockerCLI runs the docker command line and returns its output's lines.
func dockerCLI(tb testing.TB, args ...string) []string {
	tb.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		tb.Skip("skipping: the docker command line is not installed")
	}
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		tb.Fatalf("docker %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// containersLabelled returns the ids of containers, running or not, with label.
func containersLabelled(tb testing.TB, label string) []string {
	tb.Helper()
	return dockerCLI(tb, "ps", "-a", "-q", "--filter", "label="+label)
}

func TestDockerBackend_RunsTheHostsRedis(t *testing.T) {
	t.Parallel()
	c, b := testcluster.StartDocker(t, cluster.Topology{Replicas: 1}, false)
	ctx := context.Background()
	if !strings.HasPrefix(b.ImageRef(), dockerbackend.RedisImageRepo+":") {
		t.Fatalf("image %q, want a %s image", b.ImageRef(), dockerbackend.RedisImageRepo)
	}
	// The replica follows the master through its replication proxy, which
	// reaches the containerised master on a host port.
	master, replica := testcluster.Client(t, c.Nodes[0].Addr()), testcluster.Client(t, c.Nodes[1].Addr())
	if err := master.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := testcluster.Eventually(func() error { return replica.Get(ctx, "k").Err() }); err != nil {
		t.Fatalf("replica never got the key: %v", err)
	}
	// The node is the host's redis-server, run as pid 1 of its container,
	// logging to a file on the host.
	info, err := master.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	host, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if v := field(info, "redis_version"); !strings.Contains(string(host), "v="+v+" ") {
		t.Fatalf("node runs redis %s, host has %s", v, host)
	}
	if got, want := field(info, "process_id"), "1"; got != want {
		t.Fatalf("process_id = %s, want %s (pid 1 of a container)", got, want)
	}
	logs, err := os.ReadFile(c.Nodes[0].Proc.LogPath())
	if err != nil || !strings.Contains(string(logs), "Ready to accept connections") {
		t.Fatalf("log %s on the host: %v, %q", c.Nodes[0].Proc.LogPath(), err, logs)
	}
}

// field returns the value of key in an INFO reply.
func field(info, key string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return v
		}
	}
	return ""
}

func TestDockerBackend_KillAndRestartWithDelay(t *testing.T) {
	t.Parallel()
	c, _ := testcluster.StartDocker(t, cluster.Topology{Masters: 2, NodePersistence: map[string]cluster.Persistence{
		"n2": cluster.PersistAOFAlways,
	}}, false)

	ctx := context.Background()
	for _, n := range c.Nodes {
		if err := testcluster.Client(t, n.Addr()).Set(ctx, "lock", "token", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// kill -9 and restart at once: n1 (no persistence) forgets the lock,
	// n2 (appendfsync always) keeps it.
	for _, tc := range []struct {
		node     string
		wantKept bool
	}{{"n1", false}, {"n2", true}} {
		n := testcluster.Node(t, c, tc.node)
		testcluster.Inject(t, &faults.RestartFault{}, n)
		got, err := testcluster.Client(t, n.Addr()).Get(ctx, "lock").Result()
		switch {
		case tc.wantKept && (err != nil || got != "token"):
			t.Fatalf("%s after restart: GET = %q, %v; want the key kept", tc.node, got, err)
		case !tc.wantKept && !errors.Is(err, redis.Nil):
			t.Fatalf("%s after restart: GET = %q, %v; want the key lost", tc.node, got, err)
		}
	}

	// A delayed restart keeps the node down for the whole delay.
	n := c.Nodes[0]
	const delay = time.Second
	f := &faults.RestartFault{Delay: delay}
	var injectErr error
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() { injectErr = f.Inject(ctx, n) })
	rdb := testcluster.Client(t, n.Addr(), 100*time.Millisecond)
	// docker kill is not instant: wait until the node stops answering.
	if err := testcluster.Eventually(func() error {
		if rdb.Ping(ctx).Err() == nil {
			return errors.New("node still answers after the kill")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// docker kill takes a moment before the node stops answering, and
	// docker start one before it answers again; allow 250ms either side.
	up := testcluster.CheckDownForDelay(t, rdb, start, delay, delay+15*time.Second, 250*time.Millisecond, 5*time.Second,
		func() error { wg.Wait(); return injectErr })
	t.Logf("down for %v of a %v delay (docker kill + start)", up, delay)
}

func TestDockerBackend_PauseIsDockerPause(t *testing.T) {
	t.Parallel()
	c, b := testcluster.StartDocker(t, cluster.Topology{}, false)
	ctx := context.Background()
	n := c.Nodes[0]
	f := &faults.PauseFault{}
	testcluster.Inject(t, f, n)
	t.Cleanup(func() { testcluster.Heal(t, f, n) })
	label := "lockpick.run=" + b.ID()
	if got := dockerCLI(t, "ps", "-q", "--filter", "label="+label, "--filter", "status=paused"); len(got) != 1 {
		t.Fatalf("paused containers of the run: %v, want n1's", got)
	}
	if err := testcluster.Client(t, n.Addr(), 300*time.Millisecond).Ping(ctx).Err(); !testcluster.IsTimeout(err) {
		t.Fatalf("PING to a paused node: err=%v, want a timeout", err)
	}
	testcluster.Heal(t, f, n)
	testcluster.Heal(t, f, n) // resuming twice is harmless
	if err := testcluster.Client(t, n.Addr()).Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after resume: %v", err)
	}
	// Killing a paused node works, as kill -9 of a stopped process does.
	testcluster.Inject(t, f, n)
	testcluster.Inject(t, &faults.KillFault{}, n)
	if err := f.Heal(ctx, n); err != nil {
		t.Fatalf("resume of a killed node: %v, want nil", err)
	}
	testcluster.Heal(t, &faults.KillFault{}, n)
	if err := testcluster.Client(t, n.Addr()).Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
}

func TestBuildRedisImage_TaggedByContent(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	testcluster.NeedDocker(t)
	if clockShim == "" {
		t.Skip("no clock shim (gcc missing)")
	}
	ctx := context.Background()
	build := func(opt *dockerbackend.RedisImageOptions) string {
		t.Helper()
		ref, err := dockerbackend.BuildRedisImage(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	plain, again := build(nil), build(&dockerbackend.RedisImageOptions{})
	withShim := build(&dockerbackend.RedisImageOptions{ClockShim: clockShim})
	if plain != again {
		t.Fatalf("same content, two tags: %s and %s", plain, again)
	}
	if plain == withShim {
		t.Fatalf("the image with the clock shim has the tag of the one without: %s", plain)
	}
	// Debian's redis-sentinel is a symlink to redis-server's binary: the
	// image holds it once, and runs it as a sentinel by its name.
	out := dockerCLI(t, "image", "inspect", "-f", `{{index .Config.Labels "lockpick.image"}} {{json .Config.Entrypoint}}`, withShim)
	if got, want := strings.Join(out, " "), `redis ["/usr/bin/redis-server"]`; got != want {
		t.Fatalf("image config %q, want %q", got, want)
	}
}

func TestDockerBackend_ClockJumpThroughShim(t *testing.T) {
	t.Parallel()
	c, _ := testcluster.StartDocker(t, cluster.Topology{}, true)
	testcluster.CheckClockJump(t, c.Nodes[0])
}

func TestDockerBackend_ClockShimRefusedByImage(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	// An image of the user's choice gets the shim bind-mounted. A file the
	// dynamic loader refuses stands for a shim the image cannot load (a
	// static or musl redis-server): the node must not launch quietly
	// without a movable clock.
	ref, err := dockerbackend.BuildRedisImage(context.Background(), nil)
	if errors.Is(err, dockerbackend.ErrNoDocker) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b := testcluster.NewDockerBackend(t, false)
	b.Image = ref
	b.ClockShim = filepath.Join(t.TempDir(), "not-a-library.so")
	if err := os.WriteFile(b.ClockShim, []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = cluster.Start(context.Background(), b, cluster.Topology{})
	t.Logf("error: %v", err)
	if !errors.Is(err, cluster.ErrNoClockShim) || !errors.Is(err, cluster.ErrNoClock) {
		t.Fatalf("err = %v, want ErrNoClockShim (an ErrNoClock)", err)
	}
	for _, want := range []string{ref, "cannot be preloaded", "no --image"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestDockerBackend_PowerLoss runs the power-loss cases in containers:
// the lazy disks are mounted on the host, under the bind-mounted folder.
func TestDockerBackend_PowerLoss(t *testing.T) {
	t.Parallel()
	testcluster.RequireLazyDisks(t)
	b := testcluster.NewDockerBackend(t, false)
	b.LazyDisks = true
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, testcluster.PowerLossTopology)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	testcluster.CheckPowerLoss(t, c)
}

func TestDockerBackend_SentinelFailover(t *testing.T) {
	t.Parallel()
	c, _ := testcluster.StartDocker(t, cluster.Topology{Replicas: 1, Sentinels: 3}, false)
	ctx := context.Background()
	old := c.Nodes[0]
	start := time.Now()
	testcluster.Inject(t, &faults.KillFault{}, old)
	promoted, err := c.WaitFailover(ctx, old, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := promoted.Name, "n2"; got != want {
		t.Fatalf("promoted %s, want %s", got, want)
	}
	t.Logf("failover after docker kill took %v", time.Since(start))
}

func TestDockerBackend_Close_LeavesNoContainerOrNetwork(t *testing.T) {
	t.Parallel()
	testcluster.NeedDocker(t)
	networks := dockerCLI(t, "network", "ls", "-q")
	b := testcluster.NewDockerBackend(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, cluster.Topology{Replicas: 1, Sentinels: 1})
	if err != nil {
		t.Fatal(err)
	}
	label := "lockpick.run=" + b.ID()
	if got, want := len(containersLabelled(t, label)), 3; got != want {
		t.Fatalf("%d containers of the run, want %d", got, want)
	}
	testcluster.Inject(t, &faults.PauseFault{}, c.Nodes[1]) // a paused container must go too
	testcluster.Inject(t, &faults.KillFault{}, c.Nodes[0])  // and a stopped one
	if err := errors.Join(c.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}
	if got := containersLabelled(t, label); len(got) != 0 {
		t.Fatalf("containers left behind after Close: %v", got)
	}
	if got := dockerCLI(t, "network", "ls", "-q"); !slices.Equal(got, networks) {
		t.Fatalf("networks after the run %v, before %v", got, networks)
	}
}
