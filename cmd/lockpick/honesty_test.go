package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/subject"
)

// These tests drive lock programs that misbehave on purpose, and scenario
// files that cannot prove anything, through the real CLI: none of them may
// end in "safe — MATCHED" and exit 0.

// script writes an executable shell script and returns its path.
func script(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// buildExtlock builds examples/extlock, a working lock in a program of its own.
func buildExtlock(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "extlock")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lockpick/lockpick/examples/extlock").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/extlock: %v\n%s", err, out)
	}
	return bin
}

// A lock program that cannot start or never answers (not even its
// warm-up) is an infrastructure error, exit 3, naming the program and the
// last lines of its stderr.
func TestRun_DeadLockProgramIsExit3(t *testing.T) {
	testredis.Require(t, true)
	t.Setenv(subject.WarmUpEnv, "2s") // the mute program takes all of it
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"exits", "echo 'lock: cannot reach redis at 127.0.0.1:1' >&2\nexit 1\n",
			[]string{"answered none of", "cannot reach redis at 127.0.0.1:1"}},
		{"garbage", "echo 'starting up' >&2\nwhile read line; do echo 'hello there'; done\n",
			[]string{"answered none of", "not replies", "hello there", "starting up"}},
		{"mute", "cat >/dev/null\n",
			[]string{"answered none of", "wrote nothing on stderr", "flush after every reply"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := script(t, tc.name+".sh", tc.body)
			out := t.TempDir()
			code, stdout, stderr := lockpick(t, "run", "single-baseline", "--subject-cmd", prog, "--out", out)
			wantInfraFailure(t, code, stdout, stderr, out)
			for _, w := range append(tc.want, prog) {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
		})
	}
}

// A lock program that worked, then died or broke the protocol, makes the
// trial inconclusive: exit 1, one line saying why.
func TestRun_MisbehavingLockProgramIsInconclusive(t *testing.T) {
	testredis.Require(t, true)
	extlock := buildExtlock(t)
	for _, tc := range []struct {
		name, body string
		want       string
	}{
		// Works for half a second of a 2 s trial, then dies.
		{"dies", "exec timeout 0.5 " + extlock + "\n", "before the end of the trial"},
		// Says ok with a lease that is already over: no deadline.
		{"no-deadline", `while read line; do
  id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  echo "{\"id\":$id,\"ok\":true,\"token\":\"t$id\",\"valid_ms\":0}"
done
`, "without a deadline"},
		// Answers, but also writes lines that are not replies.
		{"babbles", extlock + " | sed -u 'i debug: request served'\n", "not replies"},
		// Works for clients 1 and 3; client 2's copy never answers.
		{"one-mute", muteFor2(extlock), "answered none of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := script(t, tc.name+".sh", tc.body)
			code, stdout, stderr := lockpick(t, "run", "single-baseline", "--subject-cmd", prog, "--out", t.TempDir())
			if code != exitMismatch {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, exitMismatch, stdout, stderr)
			}
			if !strings.Contains(stdout, "observed inconclusive (") || !strings.Contains(stdout, "trial 1 inconclusive: ") || !strings.Contains(stdout, tc.want) {
				t.Errorf("stdout %q, want an inconclusive trial saying %q", stdout, tc.want)
			}
		})
	}
}

// muteFor2 returns a lock program that runs extlock, except for client 2,
// which answers its warm-up, then reads its requests and never answers.
func muteFor2(extlock string) string {
	return `read -r line
case "$line" in *'"process":2'*) echo '{"id":1,"ok":false,"error":"unsupported op"}'; cat >/dev/null; exit 0;; esac
{ printf '%s\n' "$line"; cat; } | ` + extlock + "\n"
}

// A client frozen by pause-client for the rest of the trial may never
// answer: that is the fault, not a broken lock, so it neither fails the
// run nor makes the trial inconclusive.
func TestRun_PausedSilentClientIsNotAProblem(t *testing.T) {
	testredis.Require(t, true)
	prog := script(t, "one-mute.sh", muteFor2(buildExtlock(t)))
	file := filepath.Join(t.TempDir(), "paused.yaml")
	yaml := `name: paused
expect: safe
topology: {masters: 1}
lock: {kind: set-nx, ttl: 2s, retry_delay: 10ms}
clients: 3
isolate: [2]
hold: 20ms
duration: 2s
faults:
  - {at: 300ms, fault: pause-client, client: 2}
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := lockpick(t, "run", "--file", file, "--subject-cmd", prog, "--out", t.TempDir())
	if code != exitOK || strings.Contains(stdout+stderr, "answered none") {
		t.Fatalf("exit %d, want %d and no word of the paused client's silence; stdout %q stderr %q", code, exitOK, stdout, stderr)
	}
}

// A fault that can never fire within the trial, a misspelled arm field and
// a bad requirement are scenario errors: exit 2 with file and line.
func TestRun_ScenarioThatCannotProveAnythingIsExit2(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		cmd        string
		want       string
	}{
		{"late-fault", "name: late\nexpect: safe\nduration: 1s\nfaults:\n  - {at: 5s, fault: kill, node: n1}\n", "run",
			"late-fault.yaml:5: faults[0].at: due at 5s"},
		{"arm-typo", "name: typo\nexpect: safe\narms:\n  - name: a\n  - name: b\n    lock: {wait_replica: 1}\n", "compare",
			`arm-typo.yaml:6: unknown field "wait_replica" in lock (did you mean "wait_replicas"?)`},
		{"bad-require", "name: req\nexpect: safe\nrequire:\n  - {prevented: double-grant}\n", "run",
			"bad-require.yaml:4: require[0].prevented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), tc.name+".yaml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := lockpick(t, tc.cmd, "--file", file, "--out", t.TempDir())
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr %q, want one line with %q", stderr, tc.want)
			}
		})
	}
}

// A requirement the trial does not meet (here: grants after a kill that
// fired, more than two clients can make in a second) makes it inconclusive.
func TestRun_UnmetRequirementIsInconclusive(t *testing.T) {
	testredis.Require(t, true)
	file := filepath.Join(t.TempDir(), "unmet.yaml")
	yaml := "name: unmet\nexpect: safe\ntopology: {masters: 1}\nclients: 2\nduration: 1s\n" +
		"faults:\n  - {at: 300ms, fault: kill, node: n1}\nrequire:\n  - {grants: 1000, after: kill n1}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := lockpick(t, "run", "--file", file, "--out", t.TempDir())
	if code != exitMismatch {
		t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, exitMismatch, stdout, stderr)
	}
	if !strings.Contains(stdout, "observed inconclusive") || !strings.Contains(stdout, "required at least 1000 grants after kill n1 fired; found 0 grants") {
		t.Errorf("stdout %q, want an inconclusive trial for lack of grants after the kill", stdout)
	}
}
