package cluster

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

//go:embed fsyncshim/fsyncshim.c
var fsyncShimSource []byte

// FsyncJournal is the file, in a node's directory, where the fsync shim
// records what the node made durable.
const FsyncJournal = "fsync.journal"

// BuildFsyncShim compiles the fsync shim with gcc into dir and returns the
// library's path, for [ProcessBackend.FsyncShim]. Like [BuildClockShim] it
// reuses a library built from the same source, and returns [ErrNoCompiler]
// without gcc.
func BuildFsyncShim(dir string) (string, error) {
	return buildShim(dir, "fsyncshim", fsyncShimSource, clockShimFlags, []string{"-ldl"})
}

// A PowerCut is what a simulated power loss took from one node's files.
type PowerCut struct {
	// Lost is the number of bytes dropped from each data file, by path
	// relative to the node's directory; files that lost nothing are absent.
	Lost map[string]int64
	// Files is the number of data files the node had.
	Files int
}

// Bytes returns the number of bytes lost in all files.
func (c PowerCut) Bytes() int64 {
	var n int64
	for _, b := range c.Lost {
		n += b
	}
	return n
}

// String returns e.g. "lost 58 unsynced bytes of appendonlydir/appendonly.aof.1.incr.aof"
// or "lost nothing (every byte was fsynced)".
func (c PowerCut) String() string {
	switch {
	case c.Files == 0:
		return "lost nothing (it had no data files)"
	case len(c.Lost) == 0:
		return "lost nothing (every byte was fsynced)"
	}
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(c.Lost)) {
		parts = append(parts, fmt.Sprintf("%d unsynced bytes of %s", c.Lost[f], f))
	}
	return "lost " + strings.Join(parts, ", ")
}

// CutToDurable truncates every Redis data file in dir (see [WipeData]) to
// the length the fsync shim's journal says was durable when the node died:
// the size at its last fsync, carried along renames; a file never fsynced
// is emptied. It returns an error wrapping [ErrNoFsyncShim] when data files
// exist but the journal does not, since the node then ran without the shim
// and nothing can be said about what it had synced.
func CutToDurable(dir string) (PowerCut, error) {
	cut := PowerCut{Lost: map[string]int64{}}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // the shim records resolved paths
	}
	files, err := dataFiles(dir)
	if err != nil {
		return cut, err
	}
	cut.Files = len(files)
	durable, err := readFsyncJournal(filepath.Join(dir, FsyncJournal))
	if os.IsNotExist(err) {
		if len(files) == 0 {
			return cut, nil
		}
		return cut, fmt.Errorf("%w: %s has data files but no %s", ErrNoFsyncShim, dir, FsyncJournal)
	}
	if err != nil {
		return cut, err
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return cut, err
		}
		keep := min(durable[f], st.Size())
		if keep == st.Size() {
			continue
		}
		if err := os.Truncate(f, keep); err != nil {
			return cut, fmt.Errorf("cluster: power loss: %w", err)
		}
		rel, _ := filepath.Rel(dir, f)
		cut.Lost[rel] = st.Size() - keep
	}
	return cut, nil
}

// dataFiles returns the absolute paths of the regular files among Redis's
// data files in dir ([redisDataFiles], a folder's files included).
func dataFiles(dir string) ([]string, error) {
	var out []string
	for _, name := range redisDataFiles {
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		switch {
		case os.IsNotExist(err):
			continue
		case err != nil:
			return nil, err
		case st.Mode().IsRegular():
			out = append(out, path)
		case st.IsDir():
			entries, err := os.ReadDir(path)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if e.Type().IsRegular() {
					out = append(out, filepath.Join(path, e.Name()))
				}
			}
		}
	}
	return out, nil
}

// readFsyncJournal replays the fsync shim's journal at path into the
// durable length of each file by absolute, resolved path.
func readFsyncJournal(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	durable := map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("S ")):
			size, file, ok := strings.Cut(string(line[2:]), " ")
			v, err := strconv.ParseInt(size, 10, 64)
			if !ok || err != nil {
				return nil, fmt.Errorf("cluster: %s:%d: malformed fsync record %q", path, n, line)
			}
			durable[file] = v
		case bytes.HasPrefix(line, []byte("R ")):
			from, to, ok := strings.Cut(string(line[2:]), "\t")
			if !ok {
				return nil, fmt.Errorf("cluster: %s:%d: malformed rename record %q", path, n, line)
			}
			if v, ok := durable[from]; ok {
				durable[to] = v
				delete(durable, from)
			} else {
				delete(durable, to) // a file never synced replaced it
			}
		default:
			// Only a record cut short could look like this, and the shim
			// writes each with one write(2), which a kill does not split.
			return nil, fmt.Errorf("cluster: %s:%d: malformed record %q", path, n, line)
		}
	}
	return durable, sc.Err()
}

// CheckFsyncShim returns an error wrapping [ErrNoFsyncShim] unless process
// pid has the fsync shim lib mapped (a dynamic loader maps preloaded
// libraries before main, so one look settles it).
func CheckFsyncShim(pid int, lib string) error {
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return fmt.Errorf("%w: cannot check that pid %d loaded %s: %v", ErrNoFsyncShim, pid, lib, err)
	}
	want := filepath.Base(lib)
	if real, err := filepath.EvalSymlinks(lib); err == nil {
		want = real
	}
	if !bytes.Contains(maps, []byte(want)) {
		return fmt.Errorf("%w: pid %d did not load %s (a static redis-server ignores LD_PRELOAD)", ErrNoFsyncShim, pid, lib)
	}
	return nil
}
