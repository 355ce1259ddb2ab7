package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ManifestFile is the name of a shard's manifest inside its run folder.
const ManifestFile = "shard.json"

// A Shard is part Index of Count (1 ≤ Index ≤ Count) of a run's trials.
// Trial t (1-based) belongs to shard ((t-1) mod Count) + 1, so every shard
// gets every Count-th trial, of every arm, whatever the trial count. The
// zero Shard is the whole run.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ParseShard parses "i/n", e.g. "2/4".
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, e.g. 2/4", s)
	}
	sh := Shard{Index: i, Count: n}
	if n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("shard %s: the index must be between 1 and the shard count", s)
	}
	return sh, nil
}

// Validate reports a shard whose index is not within 1..Count.
func (s Shard) Validate() error {
	if s == (Shard{}) {
		return nil
	}
	if s.Count < 1 || s.Index < 1 || s.Index > s.Count {
		return fmt.Errorf("shard %d/%d: the index must be between 1 and the shard count", s.Index, s.Count)
	}
	return nil
}

// Whole reports whether s is the whole run (no sharding).
func (s Shard) Whole() bool { return s.Count <= 1 }

// Covers reports whether trial t (1-based) belongs to s.
func (s Shard) Covers(t int) bool { return s.Whole() || (t-1)%s.Count == s.Index-1 }

// Trials returns the trial numbers of a run of n trials that belong to s.
func (s Shard) Trials(n int) []int {
	var out []int
	for t := 1; t <= n; t++ {
		if s.Covers(t) {
			out = append(out, t)
		}
	}
	return out
}

// String returns "i/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Suffix is the part of a folder's name that says which shard it holds:
// "" for the whole run, "-shard2of4" for shard 2/4.
func (s Shard) Suffix() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("-shard%dof%d", s.Index, s.Count)
}

// Fits reports a shard count larger than the trial count, which would
// leave shards without a trial.
func (s Shard) Fits(trials int) error {
	if !s.Whole() && s.Count > trials {
		return fmt.Errorf("%d shards of %d trials: shard %d would have no trial; use at most %d shards", s.Count, trials, trials+1, trials)
	}
	return nil
}

// A Manifest (shard.json) says which part of a sharded run a run folder
// holds, so that `lockpick merge` can check that its shards fit together.
type Manifest struct {
	// Version is the lockpick build that ran the shard (see [Version]).
	Version string `json:"lockpick_version"`
	// Build identifies the executable that ran the shard (see [Build]):
	// shards merge only when it is the same, whatever Version says.
	Build    string `json:"lockpick_build"`
	Scenario string `json:"scenario"`
	// Arm is the compare arm this folder holds, "" for a run.
	Arm string `json:"arm,omitempty"`
	// ScenarioSHA256 is the hash of the folder's scenario.json: shards of
	// differently edited files with one name do not merge.
	ScenarioSHA256 string `json:"scenario_sha256"`
	// Seed is the first trial's seed and Trials the trial count of the
	// whole run; trial t uses seed Seed+t-1 in every shard.
	Seed   uint64 `json:"seed"`
	Trials int    `json:"trials"`
	Shard  Shard  `json:"shard"`
	// Covered lists the trial numbers in this folder.
	Covered []int `json:"covered"`
}

// ReadManifest reads dir's shard.json; a folder without one is not a shard.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("%s is not a shard (no %s: run it with --shard i/n)", dir, ManifestFile)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// FileSHA256 returns the hex SHA-256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readerSHA256(f)
}

// readerSHA256 returns the hex SHA-256 of what r holds. It streams: for a
// 50 MB executable that is 6× faster than hashing the file read whole (the
// pages of a 50 MB buffer cost more than the hash).
func readerSHA256(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.CopyBuffer(h, r, make([]byte, 1<<20)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Build identifies this lockpick executable: "sha256:" and the hex SHA-256
// of its file, so two builds of one commit (or two "(devel)" builds) differ
// unless they are byte for byte the same binary. It is "" when the
// executable cannot be read.
//
// The hash is of the file this process runs (/proc/self/exe), even when
// a rebuild has since replaced it. It is computed on the first call only
// (tens of milliseconds for a 50 MB binary), and kept in the user's cache
// directory (see [buildCache]) so that the next process of the same file
// does not read it again.
func Build() string { return build() }

var build = sync.OnceValue(func() string {
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return ""
		}
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	key, keyErr := fileKeyOf(f)
	cache := userBuildCache()
	if keyErr == nil {
		if sum := cache.lookup(key); sum != "" {
			return "sha256:" + sum
		}
	}
	sum, err := readerSHA256(f)
	if err != nil {
		return ""
	}
	// A file that changed while it was read (an in-place copy over it) is
	// not cached.
	if after, err := fileKeyOf(f); keyErr == nil && err == nil && after == key {
		cache.store(key, sum)
	}
	return "sha256:" + sum
})

// A fileKey names one version of one file: its device and inode, size, and
// modification and change times to the nanosecond. Rewriting a file
// changes its ctime, which no user call can set back, and a file replaced
// by another (a rebuild, a rename over it) has another inode or ctime.
type fileKey struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64 // ns since the epoch
}

func fileKeyOf(f *os.File) (fileKey, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileKey{}, err
	}
	return fileKey{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, // Dev is an int32 on darwin
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, nil
}

// buildCacheSize bounds the entries of the build cache: the executables a
// user has run lately (test binaries each have their own).
const buildCacheSize = 16

// A buildCache remembers the hashes of recently run executables, by
// [fileKey], in <user cache dir>/lockpick/build-sha256.json. Every failure
// to read or write it only costs a hash.
type buildCache string

// userBuildCache returns the cache, or "" (no cache) without a user cache
// directory.
func userBuildCache() buildCache {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return buildCache(filepath.Join(d, "lockpick", "build-sha256.json"))
}

type buildEntry struct {
	Key    fileKey `json:"key"`
	SHA256 string  `json:"sha256"`
}

func (c buildCache) read() []buildEntry {
	if c == "" {
		return nil
	}
	b, err := os.ReadFile(string(c))
	if err != nil {
		return nil
	}
	var es []buildEntry
	if json.Unmarshal(b, &es) != nil {
		return nil
	}
	return es
}

// lookup returns the hash stored for key, or "".
func (c buildCache) lookup(key fileKey) string {
	for _, e := range c.read() {
		if e.Key == key && len(e.SHA256) == sha256.Size*2 {
			return e.SHA256
		}
	}
	return ""
}

// store puts key's hash first and keeps the newest [buildCacheSize]
// entries. The file is replaced by a rename, so a concurrent reader sees
// the old or the new list, never half of one.
func (c buildCache) store(key fileKey, sum string) {
	if c == "" {
		return
	}
	es := []buildEntry{{Key: key, SHA256: sum}}
	for _, e := range c.read() {
		if e.Key != key && len(es) < buildCacheSize {
			es = append(es, e)
		}
	}
	b, err := json.Marshal(es)
	if err != nil {
		return
	}
	dir := filepath.Dir(string(c))
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".build-sha256-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), string(c)) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// Version names this lockpick build: its module version and, when the
// binary was built from a git checkout, the commit (with "+dirty" for
// uncommitted changes).
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " " + rev[:min(12, len(rev))] + dirty
	}
	return v
}
