package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The build cache answers for the file it hashed and for no other: not
// for a copy, nor for the same file rewritten with other bytes of the same
// size and given back its modification time.
func TestBuildCache(t *testing.T) {
	dir := t.TempDir()
	c := buildCache(filepath.Join(dir, "cache", "build-sha256.json"))
	path := filepath.Join(dir, "exe")
	if err := os.WriteFile(path, []byte("lockpick one"), 0o755); err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, path)
	sum, _ := FileSHA256(path)
	c.store(key, sum)
	if got := c.lookup(key); got != sum {
		t.Fatalf("lookup after store = %q, want %q", got, sum)
	}

	mtime := time.Unix(0, key.Mtime)
	copyPath := filepath.Join(dir, "copy")
	if err := os.WriteFile(copyPath, []byte("lockpick one"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(copyPath, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if got := c.lookup(keyOf(t, copyPath)); got != "" {
		t.Errorf("a copy of the file found %q", got)
	}

	time.Sleep(10 * time.Millisecond) // past the file system's clock tick
	if err := os.WriteFile(path, []byte("lockpick two"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if got := c.lookup(keyOf(t, path)); got != "" {
		t.Errorf("the file rewritten in place found %q", got)
	}

	for i := range buildCacheSize + 4 {
		c.store(fileKey{Ino: uint64(i) + 1}, sum)
	}
	if n := len(c.read()); n != buildCacheSize {
		t.Errorf("%d entries, want at most %d", n, buildCacheSize)
	}
}

func keyOf(t *testing.T, path string) fileKey {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	k, err := fileKeyOf(f)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
