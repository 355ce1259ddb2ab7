package cluster_test

import (
	"os"
	"testing"

	"github.com/lockpick/lockpick/cluster"
)

func TestBuildClockShim_CachesByContent(t *testing.T) {
	t.Parallel()
	if clockShim == "" {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	first, err := cluster.BuildClockShim(dir)
	if err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := cluster.BuildClockShim(dir)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || !st2.ModTime().Equal(st1.ModTime()) {
		t.Fatalf("second build gave %s (mtime %v), want the cached %s (mtime %v)", second, st2.ModTime(), first, st1.ModTime())
	}
}
