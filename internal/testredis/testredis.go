// Package testredis lets tests that need redis-server (and redis-sentinel)
// say so: without them such a test is skipped visibly, with the reason, so
// `go test ./...` on a machine without Redis reports skips instead of a
// clean pass, while the tests that need no Redis still run. With
// LOCKPICK_REQUIRE_REDIS=1 (CI sets it) a missing Redis fails the test.
package testredis

import (
	"os"
	"os/exec"
	"testing"
)

// RequireEnv is the environment variable that turns skips into failures.
const RequireEnv = "LOCKPICK_REQUIRE_REDIS"

// Require skips tb when redis-server, or with sentinel also
// redis-sentinel, is not on PATH, or fails it when LOCKPICK_REQUIRE_REDIS=1.
func Require(tb testing.TB, sentinel bool) {
	tb.Helper()
	missing, fail := decide(exec.LookPath, os.Getenv(RequireEnv), sentinel)
	switch {
	case missing == "":
	case fail:
		tb.Fatalf("%s not installed, and %s=1 (make deps)", missing, RequireEnv)
	default:
		tb.Skipf("%s not installed (make deps; %s=1 makes this a failure)", missing, RequireEnv)
	}
}

// RequireInstalled skips tb when installed is false, naming what is
// missing (make deps installs it), or fails it when LOCKPICK_REQUIRE_REDIS=1.
func RequireInstalled(tb testing.TB, what string, installed bool) {
	tb.Helper()
	switch {
	case installed:
	case os.Getenv(RequireEnv) == "1":
		tb.Fatalf("%s not installed, and %s=1 (make deps)", what, RequireEnv)
	default:
		tb.Skipf("%s not installed (make deps; %s=1 makes this a failure)", what, RequireEnv)
	}
}

// decide returns the first missing program, and whether its absence fails
// the test rather than skipping it.
func decide(lookPath func(string) (string, error), env string, sentinel bool) (missing string, fail bool) {
	progs := []string{"redis-server"}
	if sentinel {
		progs = append(progs, "redis-sentinel")
	}
	for _, p := range progs {
		if _, err := lookPath(p); err != nil {
			return p, env == "1"
		}
	}
	return "", false
}
