package trial_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/internal/testzk"
	"github.com/lockpick/lockpick/scenario"
)

// TestExternal_CuratorProgram puts examples/curatorlock, Apache Curator's
// InterProcessMutex in Java (built by its launcher with javac from
// Debian's jars during the warm-up), through two ZooKeeper attacks,
// waiting for the lock, renewing its session and fencing (--subject-caps
// block,renew,fence): a frozen
// holder's session expires and it writes late (unsafe); the lock survives
// the leader's kill (safe).
func TestExternal_CuratorProgram(t *testing.T) {
	testzk.Require(t)
	_, err := exec.LookPath("javac")
	testredis.RequireInstalled(t, "javac (a JDK)", err == nil)
	_, err = os.Stat("/usr/share/java/curator-recipes.jar")
	testredis.RequireInstalled(t, "Curator (libcurator-recipes-java)", err == nil)
	t.Parallel()
	prog, err := filepath.Abs("../examples/curatorlock/curatorlock")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ scenario, want string }{
		{"zk-pause-holder", "unsafe"},
		{"zk-leader-kill", "safe"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			p := scenario.Program{Command: []string{prog}, Caps: []string{scenario.CapBlock, scenario.CapRenew, scenario.CapFence}, Shape: scenario.ShapeZooKeeper}
			tr := runProgram(t, tc.scenario, p)
			t.Logf("observed %s; grants %v", tr.Observed, tr.Evidence.Grants)
			wantObserved(t, tr, tc.want)
		})
	}
}
