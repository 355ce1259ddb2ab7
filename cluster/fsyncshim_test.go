package cluster_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/cluster"
)

// TestCutToDurable replays a journal by hand: sizes at fsync, carried over
// renames; a never-synced file is emptied; other files are not touched.
func TestCutToDurable(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	aof := filepath.Join(dir, "appendonlydir")
	if err := os.Mkdir(aof, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"appendonlydir/appendonly.aof.1.incr.aof": "0123456789",
		"appendonlydir/appendonly.aof.manifest":   "manifest",
		"appendonlydir/never-synced.aof":          "xyz",
		"redis.conf":                              "port 1",
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	journal := "S 4 " + aof + "/appendonly.aof.1.incr.aof\n" +
		"S 8 " + aof + "/temp.manifest\n" +
		"R " + aof + "/temp.manifest\t" + aof + "/appendonly.aof.manifest\n" +
		"S 2 " + dir + "/redis.conf\n"
	if err := os.WriteFile(filepath.Join(dir, "fsync.journal"), []byte(journal), 0o644); err != nil {
		t.Fatal(err)
	}
	cut, err := cluster.CutToDurable(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"appendonlydir/appendonly.aof.1.incr.aof": "0123",
		"appendonlydir/appendonly.aof.manifest":   "manifest",
		"appendonlydir/never-synced.aof":          "",
		"redis.conf":                              "port 1",
	}
	for f, w := range want {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || string(b) != w {
			t.Errorf("%s = %q, %v; want %q", f, b, err, w)
		}
	}
	if cut.Bytes() != 9 || cut.Lost["appendonlydir/never-synced.aof"] != 3 {
		t.Errorf("cut = %v, want 9 bytes lost, 3 of them never synced", cut)
	}

	if err := os.Remove(filepath.Join(dir, "fsync.journal")); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.CutToDurable(dir); !errors.Is(err, cluster.ErrNoFsyncShim) {
		t.Errorf("data files without a journal: %v, want ErrNoFsyncShim", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fsync.journal"), []byte("S x y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.CutToDurable(dir); err == nil || !strings.Contains(err.Error(), "fsync.journal:1") {
		t.Errorf("malformed journal: %v, want an error naming line 1", err)
	}
}
