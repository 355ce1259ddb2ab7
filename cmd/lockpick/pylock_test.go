package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/results"
)

// examples/pylock, redis-py's Lock driven through the worker protocol from
// Python, is put through lockpick as a user's lock would be: safe without
// faults, unsafe when the master fails over before the key replicates.
func TestPylock_SafeAloneUnsafeInFailover(t *testing.T) {
	testredis.Require(t, true)
	requirePythonRedis(t)
	prog, err := filepath.Abs("../../examples/pylock/pylock.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ scenario, want string }{
		{"single-baseline", "safe"},
		{"failover-lock-loss", "unsafe"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := lockpick(t, "run", tc.scenario, "--subject-cmd", prog, "--trials", "2", "--out", out)
			runs, _ := filepath.Glob(filepath.Join(out, "*-"+tc.scenario+"@pylock.py-*", "verdict.json"))
			if code != exitOK || len(runs) != 1 {
				t.Fatalf("exit %d, run folders %v\nstdout %s\nstderr %s", code, runs, stdout, stderr)
			}
			var v results.Verdict
			if b, err := os.ReadFile(runs[0]); err != nil || json.Unmarshal(b, &v) != nil {
				t.Fatalf("verdict.json: %v", err)
			}
			if v.Observed != tc.want || v.TrialsInconclusive != 0 {
				t.Errorf("observed %s with %d inconclusive trials, want %s and none\n%s", v.Observed, v.TrialsInconclusive, tc.want, stdout)
			}
		})
	}
}

// requirePythonRedis skips (fails, in CI) when Debian's python3-redis is
// missing: the example runs under /usr/bin/python3.
func requirePythonRedis(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import redis.lock").Run(); err != nil {
		if os.Getenv(testredis.RequireEnv) == "1" {
			t.Fatalf("/usr/bin/python3 cannot import redis (%v), and %s=1 (make deps installs python3-redis)", err, testredis.RequireEnv)
		}
		t.Skipf("/usr/bin/python3 cannot import redis (%v): apt-get install python3-redis", err)
	}
}
