package cluster_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// TestProcessBackend_ShimNotLoaded starts a node with a "clock shim" that
// is an empty library: the node runs, but its clock cannot be moved, so
// Launch must refuse it rather than let clock faults do nothing.
func TestProcessBackend_ShimNotLoaded(t *testing.T) {
	t.Parallel()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc missing")
	}
	empty := filepath.Join(t.TempDir(), "empty.so")
	cmd := exec.Command(gcc, "-shared", "-fPIC", "-o", empty, "-x", "c", "/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build an empty library: %v\n%s", err, out)
	}
	b := testcluster.NewBackend(t)
	b.ClockShim = empty
	t.Cleanup(func() { _ = b.Close() })
	p, err := b.Launch(context.Background(), cluster.ProcSpec{Name: "n1"})
	if !errors.Is(err, cluster.ErrNoClockShim) {
		t.Fatalf("Launch with an empty shim: proc %v, err %v; want ErrNoClockShim", p, err)
	}
	t.Log(err)
}

func TestProcessBackend_ShimLoaded(t *testing.T) {
	t.Parallel()
	if clockShim == "" {
		t.Skip("no clock shim (gcc missing)")
	}
	b := testcluster.NewBackend(t)
	b.ClockShim = clockShim
	t.Cleanup(func() { _ = b.Close() })
	p, err := b.Launch(context.Background(), cluster.ProcSpec{Name: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	// A restart checks again.
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}
