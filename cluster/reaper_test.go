package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testpg"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/internal/testzk"
)

// helperEnv, when set, makes the test binary a helper process instead of
// running tests (see runHelper).
const helperEnv = "LOCKPICK_CLUSTER_TEST_HELPER"

// helperDirEnv names the directory a helper keeps its nodes' files in.
const helperDirEnv = "LOCKPICK_CLUSTER_TEST_HELPER_DIR"

// helperTopoEnv, set to "redis-cluster", makes the helper start a Redis
// Cluster of 3 primaries and 3 replicas instead of master, replica and
// sentinel; set to "etcd", 3 etcd members; set to "postgres", a
// PostgreSQL primary and standby; set to "zookeeper", 3 ZooKeeper members
// (JVMs). A "-lazy" suffix puts the nodes' data on
// lazy disks.
const helperTopoEnv = "LOCKPICK_CLUSTER_TEST_HELPER_TOPO"

// helperNodes is how many processes the helper's topology runs.
func helperNodes(topo string) int {
	switch strings.TrimSuffix(topo, "-lazy") {
	case "redis-cluster":
		return 6
	case "postgres":
		return 2
	}
	return 3
}

// runHelper is the test binary re-executed as a helper:
//
//	ticker         prints its wall clock in Unix nanoseconds every 10ms, forever
//	run-reap       starts a topology, reaps on SIGINT/SIGTERM, prints "ready", blocks
//	run-plain      the same without ReapOnSignal (Go's default signal death)
//	run-panic      the same, then panics when a line arrives on stdin
func runHelper(mode string) int {
	if mode == "ticker" {
		for {
			fmt.Println(time.Now().UnixNano())
			time.Sleep(10 * time.Millisecond)
		}
	}
	if mode == "run-reap" {
		defer cluster.ReapOnSignal(func(os.Signal) { os.Exit(1) })()
	}
	b, err := cluster.NewProcessBackend(os.Getenv(helperDirEnv))
	if err == nil {
		b.LazyDisks = strings.HasSuffix(os.Getenv(helperTopoEnv), "-lazy")
	}
	// The bound catches a hang, not a slow start: PostgreSQL on lazy disks
	// (initdb, pg_basebackup through FUSE) took over 20 s on a loaded CI.
	if code := startHelperTopology(b, err, 2*time.Minute); code != 0 {
		return code
	}
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if mode == "run-panic" && line != "" {
		panic("helper: panicking with nodes running")
	}
	select {}
}

// TestReapOnSignal_NoNodeOutlivesTheRun starts a topology in a child
// process, ends the child in each way a run can end badly, and checks that
// none of the redis processes it started survive it.
func TestReapOnSignal_NoNodeOutlivesTheRun(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	for _, tc := range []struct {
		name, mode, topo string
		end              func(p *os.Process, stdin *os.File) error
	}{
		{"SIGINT", "run-reap", "", func(p *os.Process, _ *os.File) error { return p.Signal(os.Interrupt) }},
		{"SIGTERM", "run-reap", "", func(p *os.Process, _ *os.File) error { return p.Signal(syscall.SIGTERM) }},
		{"SIGINT without handler", "run-plain", "", func(p *os.Process, _ *os.File) error { return p.Signal(os.Interrupt) }},
		{"SIGKILL", "run-plain", "", func(p *os.Process, _ *os.File) error { return p.Kill() }},
		{"panic", "run-panic", "", func(_ *os.Process, stdin *os.File) error {
			_, err := stdin.WriteString("panic\n")
			return err
		}},
		{"SIGINT, Redis Cluster", "run-reap", "redis-cluster", func(p *os.Process, _ *os.File) error { return p.Signal(os.Interrupt) }},
		{"SIGKILL, Redis Cluster", "run-plain", "redis-cluster", func(p *os.Process, _ *os.File) error { return p.Kill() }},
		{"SIGINT, etcd", "run-reap", "etcd", func(p *os.Process, _ *os.File) error { return p.Signal(os.Interrupt) }},
		{"SIGKILL, etcd", "run-plain", "etcd", func(p *os.Process, _ *os.File) error { return p.Kill() }},
		{"SIGINT, lazy disks", "run-reap", "redis-lazy", func(p *os.Process, _ *os.File) error { return p.Signal(os.Interrupt) }},
		{"SIGTERM, etcd on lazy disks", "run-reap", "etcd-lazy", func(p *os.Process, _ *os.File) error { return p.Signal(syscall.SIGTERM) }},
		{"SIGINT, postgres on lazy disks", "run-reap", "postgres-lazy", func(p *os.Process, _ *os.File) error { return p.Signal(os.Interrupt) }},
		{"SIGKILL, postgres", "run-plain", "postgres", func(p *os.Process, _ *os.File) error { return p.Kill() }},
		{"SIGTERM, zookeeper on lazy disks", "run-reap", "zookeeper-lazy", func(p *os.Process, _ *os.File) error { return p.Signal(syscall.SIGTERM) }},
		{"SIGKILL, zookeeper", "run-plain", "zookeeper", func(p *os.Process, _ *os.File) error { return p.Kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lazy := strings.HasSuffix(tc.topo, "-lazy")
			if lazy {
				testcluster.RequireLazyDisks(t)
			}
			if strings.HasPrefix(tc.topo, "postgres") {
				testpg.Require(t)
			}
			if strings.HasPrefix(tc.topo, "zookeeper") {
				testzk.Require(t)
			}
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.mode, helperDirEnv+"="+dir, helperTopoEnv+"="+tc.topo)
			stdinR, stdinW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdinW.Close()
			cmd.Stdin = stdinR
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stdinR.Close()
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || strings.TrimSpace(line) != "ready" {
				t.Fatalf("helper said %q, %v; want ready", line, err)
			}
			kids := redisChildren(t, cmd.Process.Pid)
			if got, want := len(kids), helperNodes(tc.topo); got != want {
				t.Fatalf("helper runs %d redis processes %v, want %d", got, kids, want)
			}
			for _, pid := range kids { // a postmaster's backends must go too
				kids = append(kids, childrenOf(t, pid)...)
			}
			if lazy && len(mountsUnder(t, dir)) == 0 {
				t.Fatalf("the helper mounted no lazy disk under %s", dir)
			}
			if err := tc.end(cmd.Process, stdinW); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			err = testcluster.Eventually(func() error {
				for _, pid := range kids {
					if alive(pid) {
						return fmt.Errorf("redis pid %d still alive after the run ended", pid)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if m := mountsUnder(t, dir); len(m) > 0 {
				t.Fatalf("mounts left after the run ended: %v", m)
			}
		})
	}
}

// mountsUnder returns the mount points under dir, from /proc/mounts.
func mountsUnder(tb testing.TB, dir string) []string {
	tb.Helper()
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		tb.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) > 1 && (strings.HasPrefix(f[1], dir+"/") || strings.HasPrefix(f[1], real+"/")) {
			out = append(out, f[1])
		}
	}
	return out
}

// redisChildren returns the pids of redis-server, redis-sentinel, etcd,
// postgres (postmaster) and java (ZooKeeper) processes whose parent is ppid.
func redisChildren(tb testing.TB, ppid int) []int {
	tb.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		tb.Fatal(err)
	}
	var pids []int
	for _, path := range stats {
		comm, state, parent, ok := procStat(path)
		if ok && parent == ppid && state != "Z" && (strings.HasPrefix(comm, "redis-") || comm == "etcd" || comm == "postgres" || comm == "java") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// childrenOf returns the pids of the live processes whose parent is ppid.
func childrenOf(tb testing.TB, ppid int) []int {
	tb.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		tb.Fatal(err)
	}
	var pids []int
	for _, path := range stats {
		if _, state, parent, ok := procStat(path); ok && parent == ppid && state != "Z" {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	_, state, _, ok := procStat("/proc/" + strconv.Itoa(pid) + "/stat")
	return ok && state != "Z" && state != "X"
}

// procStat parses comm, state and ppid from a /proc/<pid>/stat file.
func procStat(path string) (comm, state string, ppid int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", "", 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return "", "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return s[open+1 : end], f[0], ppid, true
}

// startHelperTopology starts a master, a replica and a sentinel on b (made
// with error err) for a helper process and prints "ready", or prints the
// error and returns 2.
func startHelperTopology(b cluster.Backend, err error, timeout time.Duration) int {
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		topo := cluster.Topology{Replicas: 1, Sentinels: 1}
		switch strings.TrimSuffix(os.Getenv(helperTopoEnv), "-lazy") {
		case "redis-cluster":
			topo = cluster.Topology{Shards: 3, Replicas: 1}
		case "etcd":
			topo = cluster.Topology{Etcd: 3}
		case "postgres":
			topo = cluster.Topology{Postgres: 2}
		case "zookeeper":
			topo = cluster.Topology{ZooKeeper: 3}
		}
		_, err = cluster.Start(ctx, b, topo)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	fmt.Println("ready")
	return 0
}
