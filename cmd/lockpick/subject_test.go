package main

import (
	"strings"
	"testing"

	"github.com/lockpick/lockpick/internal/testredis"
)

func TestRun_SubjectUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"failover-lock-loss", "--subject", "redsync"}, "replicas that sentinels promote"},
		{[]string{"redlock-crash-restart", "--subject", "redislock"}, "single-instance lock"},
		{[]string{"gc-pause-fenced", "--subject", "redislock"}, "sets fenced"},
		{[]string{"single-baseline", "--subject", "no-such-lock"}, "unknown subject"},
		{[]string{"single-baseline", "--subject-cmd", "/no/such/program"}, "--subject-cmd"},
		{[]string{"single-baseline", "--subject", "redsync", "--subject-cmd", "/bin/true"}, "does not go with --subject redsync"},
		{[]string{"single-baseline", "--subject", "external"}, "lock.command"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := lockpick(t, append([]string{"run", "--out", t.TempDir()}, tc.args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr = %q, want one line saying %q", stderr, tc.want)
			}
		})
	}
}

// TestRun_Subject checks that a library's lock, put through the scenario
// that breaks its kind, shows the violation. The runs are not parallel: a
// run ending calls cluster.KillAll, which would stop the other's nodes.
func TestRun_Subject(t *testing.T) {
	testredis.Require(t, true)
	for _, tc := range []struct{ scenario, subject, nodes string }{
		{"failover-lock-loss", "redislock", "on n2"},
		{"redlock-crash-restart", "redsync", "n3,n4,n5"},
	} {
		t.Run(tc.subject, func(t *testing.T) {
			code, stdout, stderr := lockpick(t, "run", tc.scenario, "--subject", tc.subject, "--out", t.TempDir())
			if code != exitOK {
				t.Fatalf("exit %d; stdout %q stderr %q", code, stdout, stderr)
			}
			// A subject is not judged by the scenario's expectation, which
			// is about lockpick's own lock: conclusive is exit 0.
			want := tc.scenario + "@" + tc.subject + ": observed unsafe ("
			if !strings.Contains(stdout, want) || !strings.Contains(stdout, "double-grant") || !strings.Contains(stdout, tc.nodes) {
				t.Errorf("stdout %q, want %q and a double grant naming %s", stdout, want, tc.nodes)
			}
		})
	}
}
