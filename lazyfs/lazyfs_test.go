package lazyfs_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lockpick/lockpick/lazyfs"
)

// requireEnv turns skips for want of FUSE into failures (as in package testredis,
// which this test cannot import: it imports package cluster, which imports lazyfs).
const requireEnv = "LOCKPICK_REQUIRE_REDIS"

// serveEnv makes the test binary a child that mounts "mountpoint\tbacking" and waits to be killed.
const serveEnv = "LAZYFS_TEST_SERVE"

func TestMain(m *testing.M) {
	if dirs := os.Getenv(serveEnv); dirs != "" {
		mp, backing, _ := strings.Cut(dirs, "\t")
		if _, err := lazyfs.Mount(mp, backing, lazyfs.Options{Name: "lazyfs-child"}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("mounted")
		select {}
	}
	os.Exit(m.Run())
}

// requireFUSE skips tb if this host cannot mount a lazy filesystem, or fails
// it when LOCKPICK_REQUIRE_REDIS=1.
func requireFUSE(tb testing.TB) {
	tb.Helper()
	err := lazyfs.Available()
	switch {
	case err == nil:
	case !errors.Is(err, lazyfs.ErrNoFUSE):
		tb.Fatalf("Available() = %v, want an error wrapping ErrNoFUSE", err)
	case os.Getenv(requireEnv) == "1":
		tb.Fatalf("%v, and %s=1", err, requireEnv)
	default:
		tb.Skipf("%v (%s=1 makes this a failure)", err, requireEnv)
	}
}

// mount mounts a lazy filesystem over a new backing directory until tb ends.
// It returns the filesystem, its mountpoint and the backing directory.
func mount(tb testing.TB) (*lazyfs.FS, string, string) {
	tb.Helper()
	return mountWith(tb, lazyfs.Options{})
}

// mountWith is mount with options o; the Name is set.
func mountWith(tb testing.TB, o lazyfs.Options) (*lazyfs.FS, string, string) {
	tb.Helper()
	requireFUSE(tb)
	dir := tb.TempDir()
	mp, backing := filepath.Join(dir, "mnt"), filepath.Join(dir, "disk")
	for _, d := range []string{mp, backing} {
		if err := os.Mkdir(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	o.Name = "lazyfs-test"
	f, err := lazyfs.Mount(mp, backing, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			tb.Errorf("Unmount: %v", err)
		}
	})
	return f, mp, backing
}

// writeFile writes data to path, and fsyncs the file if sync is set.
func writeFile(tb testing.TB, path, data string, sync bool) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		tb.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			tb.Fatal(err)
		}
	}
}

// syncDir fsyncs the directory at path.
func syncDir(tb testing.TB, path string) {
	tb.Helper()
	d, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		tb.Fatal(err)
	}
}

// durable writes data to path and fsyncs it and its directory.
func durable(tb testing.TB, path, data string) {
	tb.Helper()
	writeFile(tb, path, data, true)
	syncDir(tb, filepath.Dir(path))
}

// content returns what is in the file at path, or "<absent>".
func content(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// powerLoss cuts the power of f, failing tb on error.
func powerLoss(tb testing.TB, f *lazyfs.FS) lazyfs.Loss {
	tb.Helper()
	loss, err := f.PowerLoss()
	if err != nil {
		tb.Fatal(err)
	}
	return loss
}

func TestFS_PowerLoss_data(t *testing.T) {
	f, mp, _ := mount(t)
	p := filepath.Join(mp, "appendonly.aof")
	durable(t, p, "synced;")
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("unsynced"); err != nil {
		t.Fatal(err)
	}
	// Read it, so that the kernel caches the unsynced page. w stays open
	// across the loss: the mount is busy, and w must be refused afterwards.
	if got, want := content(t, p), "synced;unsynced"; got != want {
		t.Fatalf("before the loss: %q, want %q", got, want)
	}

	loss := powerLoss(t, f)
	if _, err := w.WriteString("after"); err == nil {
		t.Errorf("a write through a descriptor opened before the loss succeeded")
	}
	w.Close()
	if got, want := content(t, p), "synced;"; got != want {
		t.Errorf("after the loss: %q, want %q", got, want)
	}
	if got, want := loss.Bytes["appendonly.aof"], int64(8); got != want || len(loss.Bytes) != 1 {
		t.Errorf("Loss.Bytes = %v, want appendonly.aof: %d", loss.Bytes, want)
	}
	if got, want := loss.String(), "lost 8 unsynced bytes of appendonly.aof"; got != want {
		t.Errorf("Loss.String() = %q, want %q", got, want)
	}
	if loss := powerLoss(t, f); !loss.Empty() {
		t.Errorf("second loss = %v, want nothing lost", loss)
	}
}

func TestFS_PowerLoss_truncate(t *testing.T) {
	f, mp, _ := mount(t)
	p := filepath.Join(mp, "t")
	old := strings.Repeat("x", 100)
	durable(t, p, old)
	if err := os.Truncate(p, 10); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteAt([]byte("yy"), 50); err != nil {
		t.Fatal(err)
	}
	want := old[:10] + strings.Repeat("\x00", 40) + "yy"
	if got := content(t, p); got != want {
		t.Fatalf("truncated to 10, then written at 50: %q, want %q", got, want)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != 52 {
		t.Fatalf("Stat = %v, %v, want size 52", st, err)
	}
	w.Close()

	powerLoss(t, f)
	if got := content(t, p); got != old {
		t.Errorf("after the loss: %q, want the old 100 bytes", got)
	}

	t.Run("synced", func(t *testing.T) {
		w, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(w.Truncate(10), w.Sync(), w.Close()); err != nil {
			t.Fatal(err)
		}
		powerLoss(t, f)
		if got, want := content(t, p), old[:10]; got != want {
			t.Errorf("after the loss: %q, want %q", got, want)
		}
	})
}

func TestFS_PowerLoss_namespace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		do     func(t *testing.T, mp string)
		want   map[string]string // path → content after the loss
		undone []string
	}{{
		name: "rename undone",
		do: func(t *testing.T, mp string) {
			rename(t, mp, "a", "b")
		},
		want:   map[string]string{"a": "A", "b": "B"},
		undone: []string{"rename a → b"},
	}, {
		name: "rename with directory fsync",
		do: func(t *testing.T, mp string) {
			rename(t, mp, "a", "b")
			syncDir(t, mp)
		},
		want: map[string]string{"a": "<absent>", "b": "A"},
	}, {
		name: "rename across directories, one fsynced",
		do: func(t *testing.T, mp string) {
			rename(t, mp, "d/c", "b")
			syncDir(t, mp)
		},
		want:   map[string]string{"d/c": "C", "b": "B"},
		undone: []string{"rename d/c → b"},
	}, {
		name: "rename across directories, both fsynced",
		do: func(t *testing.T, mp string) {
			rename(t, mp, "d/c", "b")
			syncDir(t, mp)
			syncDir(t, filepath.Join(mp, "d"))
		},
		want: map[string]string{"d/c": "<absent>", "b": "C"},
	}, {
		name: "unlink undone",
		do: func(t *testing.T, mp string) {
			remove(t, mp, "a")
		},
		want:   map[string]string{"a": "A"},
		undone: []string{"unlink a"},
	}, {
		name: "unlink with directory fsync",
		do: func(t *testing.T, mp string) {
			remove(t, mp, "a")
			syncDir(t, mp)
		},
		want: map[string]string{"a": "<absent>"},
	}, {
		name: "create undone",
		do: func(t *testing.T, mp string) {
			writeFile(t, filepath.Join(mp, "new"), "N", false)
		},
		want:   map[string]string{"new": "<absent>"},
		undone: []string{"create new"},
	}, {
		name: "create with file fsync",
		do: func(t *testing.T, mp string) {
			writeFile(t, filepath.Join(mp, "new"), "N", true)
		},
		want: map[string]string{"new": "N"},
	}, {
		name: "rewrite: temp file, fsync, rename, directory fsync",
		do: func(t *testing.T, mp string) {
			writeFile(t, filepath.Join(mp, "temp-rewrite.aof"), "R", true)
			rename(t, mp, "temp-rewrite.aof", "a")
			syncDir(t, mp)
		},
		want: map[string]string{"a": "R", "temp-rewrite.aof": "<absent>"},
	}, {
		name: "rewrite without directory fsync",
		do: func(t *testing.T, mp string) {
			writeFile(t, filepath.Join(mp, "temp-rewrite.aof"), "R", true)
			rename(t, mp, "temp-rewrite.aof", "a")
		},
		want:   map[string]string{"a": "A", "temp-rewrite.aof": "R"},
		undone: []string{"rename temp-rewrite.aof → a"},
	}, {
		name: "create undone after its directory was renamed",
		do: func(t *testing.T, mp string) {
			writeFile(t, filepath.Join(mp, "d/g"), "G", false)
			rename(t, mp, "d", "d2")
			syncDir(t, mp)
		},
		want:   map[string]string{"d2/c": "C", "d2/g": "<absent>", "d": "<absent>"},
		undone: []string{"create d/g"},
	}, {
		name: "mkdir undone with a synced file inside",
		do: func(t *testing.T, mp string) {
			if err := os.Mkdir(filepath.Join(mp, "e"), 0o755); err != nil {
				t.Fatal(err)
			}
			durable(t, filepath.Join(mp, "e/f"), "F")
		},
		want:   map[string]string{"e/f": "<absent>", "e": "<absent>"},
		undone: []string{"mkdir e"},
	}, {
		name: "rmdir undone",
		do: func(t *testing.T, mp string) {
			remove(t, mp, "d/c")
			syncDir(t, filepath.Join(mp, "d"))
			remove(t, mp, "d")
		},
		want:   map[string]string{"d/c": "<absent>", "d": "<dir>"},
		undone: []string{"rmdir d"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, mp, _ := mount(t)
			durable(t, filepath.Join(mp, "a"), "A")
			durable(t, filepath.Join(mp, "b"), "B")
			if err := os.Mkdir(filepath.Join(mp, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			durable(t, filepath.Join(mp, "d/c"), "C")
			syncDir(t, mp)

			tc.do(t, mp)
			loss := powerLoss(t, f)
			for p, want := range tc.want {
				got := "<dir>"
				if st, err := os.Stat(filepath.Join(mp, p)); err != nil || !st.IsDir() {
					got = content(t, filepath.Join(mp, p))
				}
				if got != want {
					t.Errorf("%s after the loss: %q, want %q", p, got, want)
				}
			}
			if !slices.Equal(loss.Undone, tc.undone) {
				t.Errorf("Loss.Undone = %q, want %q", loss.Undone, tc.undone)
			}
			if names := list(t, mp); slices.Contains(names, ".lazyfs-trash") {
				t.Errorf("the mountpoint lists %q", names)
			}
		})
	}
}

// TestFS_PowerLoss_ordered follows Redis 7: a directory made and never
// synced in its parent, a file synced inside it, a temporary file renamed
// into it with only the target directory synced.
func TestFS_PowerLoss_ordered(t *testing.T) {
	f, mp, _ := mountWith(t, lazyfs.Options{Ordered: true})
	if err := os.Mkdir(filepath.Join(mp, "appendonlydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mp, "appendonlydir/incr.aof"), "I", true)
	writeFile(t, filepath.Join(mp, "temp-rewrite.aof"), "R", true)
	rename(t, mp, "temp-rewrite.aof", "appendonlydir/base.rdb")
	syncDir(t, filepath.Join(mp, "appendonlydir"))
	rename(t, mp, "appendonlydir/incr.aof", "appendonlydir/old.aof") // after the last sync

	loss := powerLoss(t, f)
	for p, want := range map[string]string{"appendonlydir/incr.aof": "I", "appendonlydir/base.rdb": "R", "temp-rewrite.aof": "<absent>"} {
		if got := content(t, filepath.Join(mp, p)); got != want {
			t.Errorf("%s after the loss: %q, want %q", p, got, want)
		}
	}
	if want := []string{"rename appendonlydir/incr.aof → appendonlydir/old.aof"}; !slices.Equal(loss.Undone, want) {
		t.Errorf("Loss.Undone = %q, want %q", loss.Undone, want)
	}
}

// TestFS_IgnoreSync: fsync makes nothing durable; Sync (the kernel's own
// writeback) makes everything durable up to that moment.
func TestFS_IgnoreSync(t *testing.T) {
	f, mp, _ := mountWith(t, lazyfs.Options{Ordered: true, IgnoreSync: true})
	writeFile(t, filepath.Join(mp, "before"), "B", true)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mp, "after"), "A", true)
	writeFile(t, filepath.Join(mp, "before"), "BB", true)
	syncDir(t, mp)

	loss := powerLoss(t, f)
	for p, want := range map[string]string{"before": "B", "after": "<absent>"} {
		if got := content(t, filepath.Join(mp, p)); got != want {
			t.Errorf("%s after the loss: %q, want %q", p, got, want)
		}
	}
	if loss.Total() == 0 || len(loss.Undone) != 1 {
		t.Errorf("Loss = %s, want bytes of before lost and the create of after undone", loss)
	}
	_ = f.Unmount()
	if err := f.Sync(); !errors.Is(err, lazyfs.ErrUnmounted) {
		t.Errorf("Sync after Unmount = %v, want ErrUnmounted", err)
	}
}

func rename(t *testing.T, mp, from, to string) {
	t.Helper()
	if err := os.Rename(filepath.Join(mp, from), filepath.Join(mp, to)); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, mp, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(mp, name)); err != nil {
		t.Fatal(err)
	}
}

func list(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// TestFS_mmap follows bbolt: a read-only shared mapping of the file, written
// with pwrite through another descriptor and synced with fdatasync.
func TestFS_mmap(t *testing.T) {
	f, mp, _ := mount(t)
	// A page fault on the mapping is served by this process: a stop-the-world
	// collection during one would deadlock. Faults are also taken by
	// MADV_POPULATE_READ, a system call, before every look at the mapping.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const page = 4096
	p := filepath.Join(mp, "db")
	durable(t, p, strings.Repeat("\x00", 2*page))
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := unix.Mmap(int(r.Fd()), 0, 2*page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	mapped := func(off, n int) string {
		t.Helper()
		if err := unix.Madvise(m, unix.MADV_POPULATE_READ); err != nil {
			t.Fatal(err)
		}
		return string(m[off : off+n])
	}

	if _, err := w.WriteAt([]byte("meta"), page); err != nil {
		t.Fatal(err)
	}
	if got := mapped(page, 4); got != "meta" {
		t.Errorf("mapping after pwrite: %q, want %q", got, "meta")
	}
	if err := unix.Fdatasync(int(w.Fd())); err != nil {
		t.Fatal(err)
	}
	if got := mapped(page, 4); got != "meta" {
		t.Errorf("mapping after fdatasync: %q, want %q", got, "meta")
	}
	if _, err := w.WriteAt([]byte("free"), 0); err != nil {
		t.Fatal(err)
	}
	if got := mapped(0, 4); got != "free" {
		t.Errorf("mapping after a second pwrite: %q, want %q", got, "free")
	}
	if err := unix.Munmap(m); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r.Close()

	powerLoss(t, f)
	got := content(t, p)
	if got[page:page+4] != "meta" || got[:4] != "\x00\x00\x00\x00" {
		t.Errorf("after the loss: %q at 0, %q at %d, want zeros and %q", got[:4], got[page:page+4], page, "meta")
	}
}

// TestFS_appendLog appends to a log and fsyncs every tenth record, as Redis
// does with appendfsync always, while other goroutines read it.
func TestFS_appendLog(t *testing.T) {
	f, mp, _ := mount(t)
	p := filepath.Join(mp, "appendonly.aof")
	var log bytes.Buffer
	var ends []int
	for i := range 400 {
		fmt.Fprintf(&log, "*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$1\r\nv\r\n", len(fmt.Sprint(i))+1, i)
		ends = append(ends, log.Len())
	}
	w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	syncDir(t, mp)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := os.ReadFile(p)
				if err != nil || !bytes.HasPrefix(log.Bytes(), got) {
					t.Errorf("a reader got %d bytes, err %v, not a prefix of the log: differ at %d: %q vs %q", len(got), err, diffAt(string(got), log.String()), got[max(0, diffAt(string(got), log.String())-10):min(len(got), diffAt(string(got), log.String())+20)], log.String()[max(0, diffAt(string(got), log.String())-10):diffAt(string(got), log.String())+20])
					return
				}
			}
		})
	}
	// A stat that always asks the filesystem (the kernel's attribute cache
	// bypassed) races the fsyncs below: a size read before a flush and
	// reported after it would be the old one, and O_APPEND would write at it.
	wg.Go(func() {
		var st unix.Statx_t
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = unix.Statx(unix.AT_FDCWD, p, unix.AT_STATX_FORCE_SYNC, unix.STATX_SIZE, &st)
		}
	})
	synced := 0
	for i, end := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		if _, err := w.Write(log.Bytes()[start:end]); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 && i < 390 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			synced = end
		}
	}
	close(stop)
	wg.Wait()
	w.Close()

	loss := powerLoss(t, f)
	if got, want := content(t, p), log.String()[:synced]; got != want {
		t.Errorf("after the loss: %d bytes, want the %d synced", len(got), len(want))
	}
	if got, want := loss.Total(), int64(log.Len()-synced); got != want {
		t.Errorf("Loss.Total() = %d, want %d", got, want)
	}
}

// TestFS_randomOps checks a file against a model through random writes,
// truncations, preallocations, reads and fsyncs, then a power loss.
func TestFS_randomOps(t *testing.T) {
	f, mp, _ := mount(t)
	p := filepath.Join(mp, "f")
	durable(t, p, "")
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var model, synced []byte
	pad := func(b []byte, n int) []byte {
		if n > len(b) {
			b = append(b, make([]byte, n-len(b))...)
		}
		return b
	}
	for i := range 400 {
		var err error
		switch op := rng.IntN(10); {
		case op < 4:
			b := make([]byte, 1+rng.IntN(3000))
			for j := range b {
				b[j] = byte('a' + rng.IntN(26))
			}
			off := rng.IntN(len(model) + 1000)
			_, err = fh.WriteAt(b, int64(off))
			model = pad(model, off+len(b))
			copy(model[off:], b)
		case op < 6:
			n := rng.IntN(len(model) + 500)
			err = fh.Truncate(int64(n))
			model = pad(model, n)[:n]
		case op < 7:
			off, n := rng.IntN(len(model)+2000), 1+rng.IntN(2000)
			err = unix.Fallocate(int(fh.Fd()), 0, int64(off), int64(n))
			model, synced = pad(model, off+n), pad(synced, off+n)
		case op < 8:
			err = fh.Sync()
			synced = slices.Clone(model)
		default:
			if got := content(t, p); got != string(model) {
				t.Fatalf("op %d: read %d bytes, want %d: differ at %d", i, len(got), len(model), diffAt(got, string(model)))
			}
		}
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	fh.Close()
	powerLoss(t, f)
	if got := content(t, p); got != string(synced) {
		t.Fatalf("after the loss: %d bytes, want the %d synced: differ at %d", len(got), len(synced), diffAt(got, string(synced)))
	}
}

func diffAt(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestFS_Unmount(t *testing.T) {
	f, mp, backing := mount(t)
	writeFile(t, filepath.Join(mp, "x"), "unsynced", false)
	if !mountedAt(t, mp) {
		t.Fatalf("%s is not in /proc/mounts", mp)
	}
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	if mountedAt(t, mp) {
		t.Errorf("%s is still in /proc/mounts after Unmount", mp)
	}
	if slices.Contains(lazyfs.Mounted(), f) {
		t.Errorf("Mounted() still has %s", mp)
	}
	// A clean unmount writes what was not synced.
	if got, want := content(t, filepath.Join(backing, "x")), "unsynced"; got != want {
		t.Errorf("backing file after Unmount: %q, want %q", got, want)
	}
	if names := list(t, backing); !slices.Equal(names, []string{"x"}) {
		t.Errorf("backing directory after Unmount: %q, want [x]", names)
	}
	if err := f.Unmount(); err != nil {
		t.Errorf("second Unmount: %v", err)
	}
	if _, err := f.PowerLoss(); !errors.Is(err, lazyfs.ErrUnmounted) {
		t.Errorf("PowerLoss after Unmount: %v, want ErrUnmounted", err)
	}
}

// TestSweep mounts from a child process, kills it, and sweeps its mount.
func TestSweep(t *testing.T) {
	requireFUSE(t)
	dir := t.TempDir()
	mp, backing := filepath.Join(dir, "mnt"), filepath.Join(dir, "disk")
	for _, d := range []string{mp, backing} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"="+mp+"\t"+backing)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		unix.Unmount(mp, unix.MNT_DETACH)
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "mounted\n" {
		t.Fatalf("child said %q, want mounted", line)
	}
	if !mountedAt(t, mp) {
		t.Fatalf("%s is not in /proc/mounts", mp)
	}
	if n, err := lazyfs.Sweep(dir); n != 0 || err != nil {
		t.Fatalf("Sweep with the child alive = %d, %v, want 0, nil", n, err)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	n, err := lazyfs.Sweep(dir)
	if n != 1 || err != nil {
		t.Errorf("Sweep = %d, %v, want 1, nil", n, err)
	}
	if mountedAt(t, mp) {
		t.Errorf("%s is still in /proc/mounts after Sweep", mp)
	}
}

// mountedAt reports whether /proc/mounts has a lazyfs mount at mp.
func mountedAt(t *testing.T, mp string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if fields := strings.Fields(line); len(fields) >= 3 && fields[1] == mp && fields[2] == "fuse.lazyfs" {
			return true
		}
	}
	return false
}

func TestLoss_String(t *testing.T) {
	for _, tc := range []struct {
		loss lazyfs.Loss
		want string
	}{
		{lazyfs.Loss{}, "lost nothing (everything was synced)"},
		{lazyfs.Loss{Bytes: map[string]int64{"appendonlydir/x.aof": 58}, Undone: []string{"rename a → b"}},
			"lost 58 unsynced bytes of appendonlydir/x.aof; undid rename a → b"},
		{lazyfs.Loss{Bytes: map[string]int64{"b": 2, "a": 1}}, "lost 3 unsynced bytes (1 of a, 2 of b)"},
		{lazyfs.Loss{Undone: []string{"create c", "mkdir d"}}, "undid create c, mkdir d"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.loss.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
