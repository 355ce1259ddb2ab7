package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// --list names every row and column (what --rows and --columns take) and
// what each cell plays, and runs nothing.
func TestMatrix_List(t *testing.T) {
	var out bytes.Buffer
	f := matrixFlags{list: true, run: runFlags{trials: 1, parallel: 1}}
	if err := matrix(context.Background(), &out, f); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ROW", "etcd-fenced", "COLUMN", "leader-loss", "failover / leader loss", "etcd × power-loss", "etcd-power-loss[fsync]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("matrix --list lacks %q:\n%s", want, out.String())
		}
	}
}

// A wrong column is exit 2, with a hint and the list.
func TestMatrix_UnknownColumn(t *testing.T) {
	f := matrixFlags{columns: []string{"failover"}, run: runFlags{trials: 1, parallel: 1}}
	err := matrix(context.Background(), &bytes.Buffer{}, f)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), `did you mean "leader-loss"`) {
		t.Errorf("matrix --columns failover: %v, want exit 2 with a hint", err)
	}
}

// The legend's versions come from each server's --version line.
func TestVersionIn(t *testing.T) {
	for line, want := range map[string]string{
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64": "7.0.15",
		"etcd Version: 3.4.23\nGit SHA: Not provided":                        "3.4.23",
		"postgres (PostgreSQL) 15.18":                                        "15.18",
		"no version here":                                                    "",
	} {
		if got := versionIn(line); got != want {
			t.Errorf("versionIn(%q) = %q, want %q", line, got, want)
		}
	}
}

// A row the backend cannot run is exit 2 before anything starts: the
// docker backend runs no PostgreSQL node.
func TestMatrix_BackendThatCannotRunARow(t *testing.T) {
	f := matrixFlags{rows: []string{"pg-advisory"}, run: runFlags{trials: 1, parallel: 1, backend: "docker"}}
	err := matrix(context.Background(), &bytes.Buffer{}, f)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("matrix --rows pg-advisory --backend docker: %v, want exit 2 naming PostgreSQL", err)
	}
}

// A program row asked for by name whose program is not found from here
// (the tests run in cmd/lockpick, away from examples/) is exit 2 before
// anything starts, naming the program.
func TestMatrix_ProgramRowNotFound(t *testing.T) {
	f := matrixFlags{rows: []string{"curator"}, run: runFlags{trials: 1, parallel: 1, backend: "process"}}
	err := matrix(context.Background(), &bytes.Buffer{}, f)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "examples/curatorlock/curatorlock is not found") {
		t.Errorf("matrix --rows curator from cmd/lockpick: %v, want exit 2 naming the program", err)
	}
}
