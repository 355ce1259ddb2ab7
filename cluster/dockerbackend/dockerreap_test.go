package dockerbackend_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/dockerbackend"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testetcd"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/internal/testzk"
)

// dockerHelperEnv, when set, makes the test binary a helper that starts a
// docker topology (see runDockerHelper); init runs before TestMain, so this
// file needs nothing from it.
const dockerHelperEnv = "LOCKPICK_DOCKER_TEST_HELPER"

func init() {
	if mode := os.Getenv(dockerHelperEnv); mode != "" {
		os.Exit(runDockerHelper(mode))
	}
}

// runDockerHelper is the test binary re-executed as a helper: it starts a
// docker topology, prints "ready" and blocks. In mode "reap" it reaps on
// SIGINT/SIGTERM, as lockpick run does; in mode "plain" it does not.
func runDockerHelper(mode string) int {
	if mode == "reap" {
		defer cluster.ReapOnSignal(func(os.Signal) { os.Exit(1) })()
	}
	b, err := dockerbackend.New(os.Getenv(helperDirEnv))
	if code := startHelperTopology(b, err, 60*time.Second); code != 0 {
		return code
	}
	select {}
}

// startDockerHelper runs the helper in mode and returns it once its
// topology runs, with the label that selects its containers.
func startDockerHelper(t *testing.T, mode, topo string) (*exec.Cmd, string) {
	t.Helper()
	testcluster.NeedDocker(t)
	testredis.Require(t, true)
	switch topo {
	case "etcd":
		testetcd.Require(t)
	case "zookeeper":
		testzk.Require(t)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), dockerHelperEnv+"="+mode, helperDirEnv+"="+t.TempDir(), helperTopoEnv+"="+topo)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper said %q, %v; want ready", line, err)
	}
	label := "lockpick.pid=" + strconv.Itoa(cmd.Process.Pid)
	if got, want := len(containersLabelled(t, label)), helperNodes(topo); got != want {
		t.Fatalf("helper runs %d containers, want %d", got, want)
	}
	return cmd, label
}

func TestReapOnSignal_RemovesContainers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sig  syscall.Signal
		topo string
	}{{syscall.SIGINT, ""}, {syscall.SIGTERM, ""}, {syscall.SIGINT, "redis-cluster"}, {syscall.SIGINT, "etcd"}, {syscall.SIGTERM, "zookeeper"}} {
		sig := tc.sig
		t.Run(strings.TrimSpace(sig.String()+" "+tc.topo), func(t *testing.T) {
			t.Parallel()
			cmd, label := startDockerHelper(t, "reap", tc.topo)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if got := containersLabelled(t, label); len(got) != 0 {
				t.Fatalf("containers left behind after %v: %v", sig, got)
			}
		})
	}
}

func TestRemoveOrphanContainers_AfterSIGKILL(t *testing.T) {
	t.Parallel()
	cmd, label := startDockerHelper(t, "plain", "")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// Nobody could clean up after kill -9: the containers outlive their
	// owner until the next docker backend on the host removes them.
	if got := containersLabelled(t, label); len(got) != 3 {
		t.Fatalf("%d containers after kill -9 of their owner, want 3 orphans", len(got))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if n, err := dockerbackend.RemoveOrphanContainers(ctx); err != nil || n < 3 {
		t.Fatalf("RemoveOrphanContainers = %d, %v; want at least the helper's 3", n, err)
	}
	if got := containersLabelled(t, label); len(got) != 0 {
		t.Fatalf("orphans left behind: %v", got)
	}
}
