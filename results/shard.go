package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
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
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Build identifies this lockpick executable: "sha256:" and the hex SHA-256
// of its file, so two builds of one commit (or two "(devel)" builds) differ
// unless they are byte for byte the same binary. It is "" when the
// executable cannot be read.
func Build() string {
	buildOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		if sum, err := FileSHA256(exe); err == nil {
			build = "sha256:" + sum
		}
	})
	return build
}

var (
	buildOnce sync.Once
	build     string
)

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
