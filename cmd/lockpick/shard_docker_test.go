package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/dockerbackend"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/trial"
)

// TestShards_InContainersMergeToTheUnshardedRun builds the runner image,
// runs a comparison as 4 shards in 4 containers of it on the local engine,
// each picking its shard from JOB_COMPLETION_INDEX as a Kubernetes Indexed
// Job would, merges them, and compares with the same comparison run in one
// process: same trials, seeds and verdicts, arm by arm.
func TestShards_InContainersMergeToTheUnshardedRun(t *testing.T) {
	testredis.Require(t, true)
	docker := needDockerCLI(t)
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(t.TempDir(), "lockpick")
	build := exec.Command(gobin, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	shim, err := cluster.BuildClockShim(trial.ShimCache())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := dockerbackend.BuildRunnerImage(ctx, &dockerbackend.RunnerImageOptions{Lockpick: bin, ClockShim: shim})
	if err != nil {
		t.Fatal(err)
	}

	const n = 4
	args := []string{"compare", "redlock-crash-restart", "--arms", "no-delay,delayed-restart", "--trials", "4", "--seed", "11", "-q"}
	shardsOut := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for k := range n {
		name := fmt.Sprintf("lockpick-test-shard-%d-%d", os.Getpid(), k)
		t.Cleanup(func() { _ = exec.Command(docker, "rm", "-f", name).Run() }) // a container outliving a failed test
		wg.Go(func() {
			run := append([]string{"run", "--rm", "--name", name, "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
				"-e", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", k), "-v", shardsOut + ":/work/results", ref},
				append(args, "--shards", fmt.Sprint(n))...)
			cmd := exec.CommandContext(ctx, docker, run...)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == exitMismatch {
				err = nil // an inconclusive trial in this shard: its folder is written
			}
			if err != nil {
				errs[k] = fmt.Errorf("shard container %d: %v\n%s", k, err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The same comparison in this process, once the containers are done, so
	// the two do not share the CPU. Exit 1 here means an inconclusive trial
	// (real timing, under -race on a loaded machine): the folder is written
	// and compared all the same.
	wholeOut := t.TempDir()
	code, stdout, stderr := lockpick(t, append(args, "--out", wholeOut)...)
	if code != exitOK && code != exitMismatch {
		t.Fatalf("unsharded compare: exit %d\n%s%s", code, stdout, stderr)
	}
	shards, _ := filepath.Glob(filepath.Join(shardsOut, "runs", "*-shard*of4"))
	if len(shards) != n {
		t.Fatalf("shard folders: %v, want %d", shards, n)
	}
	mergedOut := t.TempDir()
	code, stdout, stderr = lockpick(t, append([]string{"merge", "--out", mergedOut}, shards...)...)
	if code != exitOK && code != exitMismatch {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	whole, merged := onlyDir(t, wholeOut), onlyDir(t, mergedOut)
	agreed := 0
	for _, arm := range []string{"no-delay", "delayed-restart"} {
		w, m := verdictOf(t, filepath.Join(whole, arm)), verdictOf(t, filepath.Join(merged, arm))
		if len(w.TrialResults) != len(m.TrialResults) {
			t.Fatalf("arm %s: %d trials unsharded, %d merged", arm, len(w.TrialResults), len(m.TrialResults))
		}
		for i, a := range w.TrialResults {
			b := m.TrialResults[i]
			if a.Trial != b.Trial || a.Seed != b.Seed || a.Dir != b.Dir {
				t.Errorf("arm %s: unsharded trial %d (seed %d, %s), merged trial %d (seed %d, %s)", arm, a.Trial, a.Seed, a.Dir, b.Trial, b.Seed, b.Dir)
			}
		}
		// Outcomes come from real timing: with 4 containers and this
		// process sharing 2 cores, a trial may be inconclusive on one side
		// only. Conclusive outcomes must agree, trial by trial.
		for i, a := range w.TrialResults {
			b := m.TrialResults[i]
			if a.Observed != b.Observed {
				if a.Observed == "inconclusive" || b.Observed == "inconclusive" {
					t.Logf("arm %s trial %d: unsharded %s, merged %s (%s%s)", arm, a.Trial, a.Observed, b.Observed, a.Reason, b.Reason)
					continue
				}
				t.Errorf("arm %s trial %d (seed %d): unsharded %s, merged %s", arm, a.Trial, a.Seed, a.Observed, b.Observed)
				continue
			}
			if a.Observed != "inconclusive" {
				agreed++
			}
		}
	}
	if agreed == 0 {
		t.Error("no trial was conclusive on both sides: the test compared no outcome")
	}
}

// needDockerCLI returns the docker command, skipping the test (failing it
// with LOCKPICK_REQUIRE_DOCKER set) when it or the engine is missing.
func needDockerCLI(t *testing.T) string {
	t.Helper()
	docker, err := exec.LookPath("docker")
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = dockerbackend.Available(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("LOCKPICK_REQUIRE_DOCKER") != "" {
			t.Fatalf("LOCKPICK_REQUIRE_DOCKER is set but %v", err)
		}
		t.Skipf("skipping: no docker command or engine: %v", err)
	}
	return docker
}

func onlyDir(t *testing.T, parent string) string {
	t.Helper()
	es, err := os.ReadDir(parent)
	if err != nil || len(es) != 1 || strings.HasSuffix(es[0].Name(), ".partial") {
		t.Fatalf("%s: want one finished folder, got %v (%v)", parent, es, err)
	}
	return filepath.Join(parent, es[0].Name())
}

func verdictOf(t *testing.T, dir string) results.Verdict {
	t.Helper()
	var v results.Verdict
	b, err := os.ReadFile(filepath.Join(dir, "verdict.json"))
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}
