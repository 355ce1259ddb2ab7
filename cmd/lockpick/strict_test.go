package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A scenario file with a value lockpick would otherwise replace or fail
// on later (a lock program that is not there, ttl: 0s, an empty file) is
// a usage error, exit 2, on one line naming the file, line and field:
// refused when the file is read, never run as another scenario nor failed
// as an infrastructure problem.
func TestRun_StrictFileIsExit2(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"missing-program", "name: bad\nexpect: conclusive\nlock: {kind: external, command: [/nonexistent/mylock]}\n",
			"missing-program.yaml:3: lock.command: no program /nonexistent/mylock"},
		{"ttl-zero", "name: bad\nexpect: safe\nlock:\n  ttl: 0s\n", "ttl-zero.yaml:4: lock.ttl: must be above 0"},
		{"empty", "", "empty.yaml: the file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), tc.name+".yaml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := lockpick(t, "run", "--file", file, "--out", t.TempDir())
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, exitUsage, stdout, stderr)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr = %q, want one line with %q", stderr, tc.want)
			}
		})
	}
}
