package campaign

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// ErrShardsDontFit means the folders given to [Merge] are not the shards of
// one run: a shard is missing or given twice, or they differ in scenario,
// lockpick build, seed, trial count or shard count.
var ErrShardsDontFit = errors.New("shards do not fit together")

// ErrRecordDiffers means a shard's verdict.json is not what its trials'
// histories give when [Merge] checks them again: a trial's observation or
// anomaly counts, or the verdict's sum of its trials.
var ErrRecordDiffers = errors.New("a shard's recorded verdict differs from its histories")

// A Merged is one run or comparison put back together by [Merge].
type Merged struct {
	// Dir is the merged folder.
	Dir string
	// Verdict is set for a run, Comparison for a compare, with Arms the
	// verdicts of its arms (in the arms' folders under Dir).
	Verdict    *results.Verdict
	Comparison *results.Comparison
	Arms       []*results.Verdict
}

// Merge puts the shard folders of sharded runs and comparisons (made with
// [trial.Options].Shard) back together, one merged folder under out per run or
// comparison, with the verdicts one unsharded run with the same seed would
// have written (wall times aside). Every trial's history is checked again
// by this binary's checker. Shards are grouped by scenario; a group whose
// shards do not fit yields an error wrapping [ErrShardsDontFit] that names
// the folders or the missing shards, a shard whose verdict.json differs
// from its histories one wrapping [ErrRecordDiffers] that names the trial,
// and then no folder is written. A failure to write returns the groups
// merged before it with the error.
func Merge(dirs []string, out string) ([]Merged, error) {
	groups, order, err := groupShards(dirs)
	if err != nil {
		return nil, err
	}
	for _, key := range order {
		if err := fits(groups[key]); err != nil {
			return nil, err
		}
	}
	for _, key := range order {
		if err := groups[key].recheck(); err != nil {
			return nil, err
		}
	}
	var merged []Merged
	for _, key := range order {
		g := groups[key]
		var m Merged
		if g.compare {
			m, err = mergeCompare(g, out, trial.FolderName("compare-", g.scenario, g.seed, "-merged"))
		} else {
			var dir *results.RunDir
			if dir, err = trial.CreateFolder(out, trial.FolderName("", g.scenario, g.seed, "-merged")); err == nil {
				m.Verdict, err = mergeRun(g.shards, dir)
				if err == nil {
					m.Dir, err = dir.Commit()
				}
				if err != nil {
					dir.Abort()
				}
			}
		}
		if err != nil {
			return merged, err
		}
		merged = append(merged, m)
	}
	return merged, nil
}

// A shardDir is one shard folder and its manifest (for a compare, the
// manifest of its first arm).
type shardDir struct {
	path string
	m    *results.Manifest
	c    *results.Comparison // a compare shard's compare.json
	// v is a run shard's verdict.json and checks its trials' histories
	// checked again, in v's order; recheck fills them.
	v      *results.Verdict
	checks []checker.Result
}

// A shardGroup is the shards of one run or comparison.
type shardGroup struct {
	scenario string
	seed     uint64
	compare  bool
	shards   []shardDir
	// arms holds, for a comparison, each arm's shard folders, in the order
	// of the arms; fits fills it.
	arms [][]shardDir
}

func groupShards(dirs []string) (map[string]*shardGroup, []string, error) {
	if len(dirs) == 0 {
		return nil, nil, fmt.Errorf("%w: no folder given", ErrShardsDontFit)
	}
	groups := map[string]*shardGroup{}
	var order []string
	for _, d := range dirs {
		sd, err := readShard(d)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrShardsDontFit, err)
		}
		kind, scenario := "run", sd.m.Scenario
		if sd.c != nil {
			kind, scenario = "compare", sd.c.Scenario
		}
		key := kind + " " + scenario
		g, ok := groups[key]
		if !ok {
			g = &shardGroup{scenario: scenario, seed: sd.m.Seed, compare: sd.c != nil}
			groups[key] = g
			order = append(order, key)
		}
		g.shards = append(g.shards, sd)
	}
	return groups, order, nil
}

// readShard reads a run shard's manifest, or a compare shard's compare.json
// and its first arm's manifest.
func readShard(dir string) (shardDir, error) {
	var c results.Comparison
	switch err := readRunFile(dir, "compare.json", &c); {
	case err == nil:
		if len(c.Arms) == 0 {
			return shardDir{}, fmt.Errorf("%s: compare.json lists no arm", dir)
		}
		m, err := results.ReadManifest(filepath.Join(dir, c.Arms[0].Dir))
		return shardDir{path: dir, m: m, c: &c}, err
	case !errors.Is(err, os.ErrNotExist):
		return shardDir{}, err
	}
	m, err := results.ReadManifest(dir)
	return shardDir{path: dir, m: m}, err
}

// fits reports why the shards of g are not exactly the shards of one run.
func fits(g *shardGroup) error {
	first := g.shards[0]
	for _, sd := range g.shards[1:] {
		if err := sameRun(first, sd); err != nil {
			return fmt.Errorf("%w: %v", ErrShardsDontFit, err)
		}
	}
	if err := shardSet(g.shards); err != nil || !g.compare {
		return err // a compare's shard folders first, named by the comparison, then each arm's
	}
	g.arms = nil
	for _, arm := range first.c.Arms {
		var arms []shardDir
		for _, sd := range g.shards {
			m, err := results.ReadManifest(filepath.Join(sd.path, arm.Arm))
			if err != nil {
				return fmt.Errorf("%w: %v", ErrShardsDontFit, err)
			}
			arms = append(arms, shardDir{path: filepath.Join(sd.path, arm.Arm), m: m})
		}
		g.arms = append(g.arms, arms)
		for _, sd := range arms[1:] {
			if err := sameRun(arms[0], sd); err != nil {
				return fmt.Errorf("%w: %v", ErrShardsDontFit, err)
			}
		}
		if err := shardSet(arms); err != nil {
			return err
		}
	}
	return nil
}

// sameRun reports the first way in which shards a and b differ as parts of
// one run.
func sameRun(a, b shardDir) error {
	x, y := a.m, b.m
	differ := func(what string, u, v any) error {
		return fmt.Errorf("%s and %s differ in %s: %v and %v", a.path, b.path, what, u, v)
	}
	switch {
	case x.Build == "" || y.Build == "":
		return fmt.Errorf("%s records no lockpick build (shard.json has no lockpick_build: made by an older lockpick, or its executable was unreadable); run every shard again with one build", pick(x.Build == "", a.path, b.path))
	case x.Build != y.Build:
		return fmt.Errorf("%s and %s were run by different lockpick builds (%s and %s, lockpick_build in shard.json, versions %s and %s): run every shard with one executable", a.path, b.path, short(x.Build), short(y.Build), x.Version, y.Version)
	case x.Version != y.Version:
		return differ("lockpick version", x.Version, y.Version)
	case x.ScenarioSHA256 != y.ScenarioSHA256:
		return fmt.Errorf("%s and %s ran different scenario files (scenario.json differs)", a.path, b.path)
	case x.Seed != y.Seed:
		return differ("seed", x.Seed, y.Seed)
	case x.Trials != y.Trials:
		return differ("trial count", x.Trials, y.Trials)
	case x.Shard.Count != y.Shard.Count:
		return differ("shard count", x.Shard.Count, y.Shard.Count)
	case a.c != nil && !slices.EqualFunc(a.c.Arms, b.c.Arms, func(p, q results.ArmResult) bool { return p.Arm == q.Arm }):
		return fmt.Errorf("%s and %s compare different arms", a.path, b.path)
	}
	return nil
}

// pick returns a when first, else b.
func pick(first bool, a, b string) string {
	if first {
		return a
	}
	return b
}

// short abbreviates a build identity for a message.
func short(build string) string { return build[:min(len(build), len("sha256:")+12)] }

// shardSet reports a shard given twice, a missing shard, or a shard folder
// that does not hold exactly its trials.
func shardSet(shards []shardDir) error {
	n := shards[0].m.Shard.Count
	seen := map[int]string{}
	for _, sd := range shards {
		i := sd.m.Shard.Index
		if prev, ok := seen[i]; ok {
			if sameFolder(prev, sd.path) {
				return fmt.Errorf("%w: shard %d/%d given twice, the same folder both times: %s", ErrShardsDontFit, i, n, sd.path)
			}
			return fmt.Errorf("%w: shard %d/%d given twice: %s and %s", ErrShardsDontFit, i, n, prev, sd.path)
		}
		seen[i] = sd.path
		if want := sd.m.Shard.Trials(sd.m.Trials); !slices.Equal(sd.m.Covered, want) {
			return fmt.Errorf("%w: %s holds trials %v of shard %d/%d, which has %v", ErrShardsDontFit, sd.path, sd.m.Covered, i, n, want)
		}
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		what := "shard " + missing[0] + " is"
		if len(missing) > 1 {
			what = "shards " + strings.Join(missing, ", ") + " are"
		}
		of := "scenario " + shards[0].m.Scenario
		if c := shards[0].c; c != nil {
			of = "compare of " + c.Scenario
		}
		return fmt.Errorf("%w: %s missing (%s, seed %d)", ErrShardsDontFit, what, of, shards[0].m.Seed)
	}
	return nil
}

// sameFolder reports whether a and b name one folder.
func sameFolder(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// mergeRun copies the trials of the run shards (checked again by
// [shardGroup.recheck]) into dir and writes the whole run's verdict,
// history and report there.
func mergeRun(shards []shardDir, dir *results.RunDir) (*results.Verdict, error) {
	s, err := RunScenario(shards[0].path)
	if err != nil {
		return nil, err
	}
	if err := dir.WriteJSON("scenario.json", s); err != nil {
		return nil, err
	}
	type checked struct {
		t results.Trial
		r checker.Result
	}
	var all []checked
	for _, sd := range shards {
		for i, t := range sd.v.TrialResults {
			if err := os.CopyFS(dir.Path(t.Dir), os.DirFS(filepath.Join(sd.path, t.Dir))); err != nil {
				return nil, fmt.Errorf("merge: copy %s: %w", filepath.Join(sd.path, t.Dir), err)
			}
			// the merged folder keeps this binary's check, not the shard's
			if err := dir.WriteJSON(filepath.Join(t.Dir, "check.json"), sd.checks[i]); err != nil {
				return nil, err
			}
			all = append(all, checked{t, sd.checks[i]})
		}
	}
	slices.SortFunc(all, func(a, b checked) int { return cmp.Compare(a.t.Trial, b.t.Trial) })
	trials := make([]results.Trial, len(all))
	checks := make([]checker.Result, len(all))
	for i, c := range all {
		trials[i], checks[i] = c.t, c.r
	}
	v := judge.Run(s.Name, s.Rules(), shards[0].m.Seed, trials, checks)
	shown := trial.ShownTrial(trials)
	tr, err := readTrial(dir.Path(""), s, trials[shown])
	if err != nil {
		return nil, err
	}
	if err := trial.FinishRun(dir, s, v, tr, shown); err != nil {
		return nil, err
	}
	return v, nil
}

// recheck checks every trial history of g's shards again with this
// binary's checker, and refuses a shard whose verdict.json says otherwise.
func (g *shardGroup) recheck() error {
	groups := [][]shardDir{g.shards}
	if g.compare {
		groups = g.arms
	}
	for _, shards := range groups {
		for i := range shards {
			if err := shards[i].recheck(); err != nil {
				return err
			}
		}
	}
	return nil
}

// recheck reads the run shard's verdict.json and checks each trial's
// history again: the observation it gives (with the trial's recorded
// evidence of what the faults did) and its anomaly counts must be the
// trial's, and the verdict must sum up its trials as [judge.Run] does.
func (sd *shardDir) recheck() error {
	s, err := RunScenario(sd.path)
	if err != nil {
		return err
	}
	var v results.Verdict
	if err := readRunFile(sd.path, "verdict.json", &v); err != nil {
		return err
	}
	if got, want := len(v.TrialResults), len(sd.m.Covered); got != want {
		return fmt.Errorf("%w: %s: verdict.json lists %d trials, shard.json %d", ErrRecordDiffers, sd.path, got, want)
	}
	checks := make([]checker.Result, len(v.TrialResults))
	for i, t := range v.TrialResults {
		if t.Trial != sd.m.Covered[i] {
			return fmt.Errorf("%w: %s: verdict.json lists trial %d where shard.json has trial %d", ErrRecordDiffers, sd.path, t.Trial, sd.m.Covered[i])
		}
		if checks[i], err = recheckTrial(sd.path, s, t); err != nil {
			return err
		}
	}
	want := judge.Run(s.Name, s.Rules(), v.Seed, v.TrialResults, checks)
	if d := verdictDiff(&v, want); d != "" {
		return fmt.Errorf("%w: %s says %s", ErrRecordDiffers, filepath.Join(sd.path, "verdict.json"), d)
	}
	sd.v, sd.checks = &v, checks
	return nil
}

// recheckTrial checks trial t's history in run folder dir again and returns
// the result, or an error naming the trial when its record differs.
func recheckTrial(dir string, s scenario.Scenario, t results.Trial) (checker.Result, error) {
	where := fmt.Sprintf("%s: trial %d", dir, t.Trial)
	h, err := checker.ReadFile(filepath.Join(dir, t.Dir, checker.HistoryFile))
	if err != nil {
		return checker.Result{}, fmt.Errorf("%w: %s: %v", ErrRecordDiffers, where, err)
	}
	r := checker.CheckTimeout(h, trial.CheckOptions(s), trial.CheckTimeout)
	if len(r.TimedOut) > 0 {
		return r, fmt.Errorf("%w: %s could not be checked again: the linearizability search timed out (%s)", ErrRecordDiffers, where, strings.Join(r.TimedOut, ", "))
	}
	if o := judge.Again(s.Rules(), r, judge.RecordOf(t)); o.Observed != t.Observed {
		return r, fmt.Errorf("%w: %s is recorded %s (%s) in verdict.json; its history checks %s (%s)", ErrRecordDiffers, where, t.Observed, results.CountsText(t.Anomalies), o.Observed, results.CountsText(judge.Counts(r)))
	}
	return r, nil
}

// verdictDiff names the first field in which recorded differs from want;
// "" when they agree.
func verdictDiff(recorded, want *results.Verdict) string {
	for _, f := range []struct {
		name string
		r, w any
	}{
		{"expect", recorded.Expect, want.Expect},
		{"observed", recorded.Observed, want.Observed},
		{"matched", recorded.Matched, want.Matched},
		{"trials", recorded.Trials, want.Trials},
		{"trials_with_anomaly", recorded.TrialsWithAnomaly, want.TrialsWithAnomaly},
		{"trials_violated", recorded.TrialsViolated, want.TrialsViolated},
		{"trials_inconclusive", recorded.TrialsInconclusive, want.TrialsInconclusive},
		{"anomalies", results.CountsText(recorded.Anomalies), results.CountsText(want.Anomalies)},
	} {
		if f.r != f.w {
			return fmt.Sprintf("%s is %v; its trials give %v", f.name, f.r, f.w)
		}
	}
	return ""
}

// mergeCompare merges every arm of the compare shards g into one
// comparison folder named name under out.
func mergeCompare(g *shardGroup, out, name string) (Merged, error) {
	dir, err := trial.CreateFolder(out, name)
	if err != nil {
		return Merged{}, err
	}
	first := g.shards[0]
	c := &results.Comparison{Scenario: g.scenario, Seed: g.seed, Trials: first.m.Trials}
	var verdicts []*results.Verdict
	for i, arm := range first.c.Arms {
		ad, err := results.Create(dir.Path(""), arm.Arm)
		if err == nil {
			var v *results.Verdict
			if v, err = mergeRun(g.arms[i], ad); err == nil {
				c.Arms = append(c.Arms, judge.Arm(arm.Arm, arm.Summary, v, arm.Arm))
				verdicts = append(verdicts, v)
				_, err = ad.Commit()
			}
		}
		if err != nil {
			dir.Abort()
			return Merged{}, err
		}
	}
	for _, sd := range g.shards {
		c.WallSeconds += sd.c.WallSeconds // the shards' machine time, not the fleet's
	}
	c.AddTests()
	err = dir.WriteJSON("compare.json", c)
	if err == nil {
		err = c.WriteHTMLFile(dir.Path("report.html"))
	}
	final := ""
	if err == nil {
		final, err = dir.Commit()
	}
	if err != nil {
		dir.Abort()
		return Merged{}, err
	}
	return Merged{Dir: final, Comparison: c, Arms: verdicts}, nil
}

// ShardFolders returns dir itself if it is a shard folder, else the shard
// folders directly inside it (unfinished .partial folders and merged
// folders left out), so that `lockpick merge results/runs` takes every shard
// a fleet left there.
//
// A fleet's download often nests them one level deeper (one folder per
// machine, the shard inside): when dir holds no shard folder, its
// subfolders are searched the same way.
func ShardFolders(dir string) ([]string, error) {
	if isShard(dir) {
		return []string{dir}, nil
	}
	out, err := shardsIn(dir)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		subs, _ := os.ReadDir(dir)
		for _, e := range subs {
			if e.IsDir() {
				deeper, _ := shardsIn(filepath.Join(dir, e.Name()))
				out = append(out, deeper...)
			}
		}
	}
	if len(out) == 0 {
		return []string{dir}, nil // let Merge say why it is not a shard
	}
	return out, nil
}

// shardsIn returns the finished shard folders directly inside dir.
func shardsIn(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() && !strings.HasSuffix(e.Name(), ".partial") && isShard(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func isShard(dir string) bool {
	sd, err := readShard(dir)
	return err == nil && (sd.c == nil || sd.c.Shard != "")
}
