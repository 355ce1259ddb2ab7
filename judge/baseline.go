package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockpick/lockpick/results"
)

// A Baseline is what a lock under test (`lockpick run --subject`) was
// proven to show, scenario by scenario: `--update-baseline FILE` writes it,
// `--baseline FILE` compares a later run with it, as snapshot tests do. An
// inconclusive verdict proves nothing, so it whitelists nothing: a later
// unsafe, stuck or starving verdict of that scenario is worse than it.
// docs/verdicts.md documents the file.
type Baseline struct {
	// Version is the file format's version, 1.
	Version int `json:"version"`
	// Subject names the lock the baseline was written for, e.g. "redsync"
	// or "extlock" (an external program's file name).
	Subject string `json:"subject"`
	// Scenarios maps a scenario's name (without "@subject") to what the
	// subject showed in it.
	Scenarios map[string]BaselineEntry `json:"scenarios"`
}

// A BaselineEntry is one scenario's verdict in a [Baseline].
type BaselineEntry struct {
	// Observed is safe, unsafe, stuck, starves or inconclusive (nothing
	// proven: judged as if safe).
	Observed string `json:"observed"`
	// Anomalies lists the kinds of anomaly found, sorted; always empty for
	// an inconclusive entry.
	Anomalies []string `json:"anomalies,omitempty"`
}

// baselineVersion is the format [Baseline.Version] this code writes.
const baselineVersion = 1

// BaseName returns a run's scenario name without its "@subject" suffix.
func BaseName(scenario string) string {
	name, _, _ := strings.Cut(scenario, "@")
	return name
}

// NewBaseline records the verdicts vs of subject; skipped ones are left out.
// It returns the names of the scenarios whose verdict it could not record
// because they proved nothing (inconclusive): their entry says so, and
// whitelists no anomaly.
func NewBaseline(subject string, vs []*results.Verdict) (b Baseline, unproven []string) {
	b = Baseline{Version: baselineVersion, Subject: subject, Scenarios: map[string]BaselineEntry{}}
	for _, v := range vs {
		if v.Skipped != "" {
			continue
		}
		e := entryOf(v)
		b.Scenarios[BaseName(v.Scenario)] = e
		if e.Observed == Inconclusive {
			unproven = append(unproven, BaseName(v.Scenario))
		}
	}
	return b, unproven
}

// entryOf is v as a baseline records it: its observation and the kinds of
// anomaly it found, but for those its scenario tolerates, which may come
// and go between runs without changing the verdict. An inconclusive
// verdict's anomalies are not recorded: they prove nothing.
func entryOf(v *results.Verdict) BaselineEntry {
	if v.Observed == Inconclusive {
		return BaselineEntry{Observed: Inconclusive}
	}
	var kinds []string
	for k, n := range v.Anomalies {
		if n > 0 && !slices.Contains(v.Tolerate, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return BaselineEntry{Observed: v.Observed, Anomalies: kinds}
}

// ReadBaseline reads a baseline file.
func ReadBaseline(path string) (Baseline, error) {
	var b Baseline
	data, err := os.ReadFile(path)
	if err != nil {
		return b, err
	}
	// Strictly: a misspelled field ("scenario") would leave every
	// scenario out of the baseline, and a run worse than it would pass.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("%s: %w", path, err)
	}
	if b.Version != baselineVersion {
		return b, fmt.Errorf("%s: baseline version %d, this lockpick reads %d", path, b.Version, baselineVersion)
	}
	for name, e := range b.Scenarios {
		if _, ok := severity[e.Observed]; !ok && e.Observed != Inconclusive {
			return b, fmt.Errorf("%s: scenario %s: observed %q is not safe, starves, stuck, unsafe or inconclusive", path, name, e.Observed)
		}
	}
	return b, nil
}

// WriteFile writes b to path atomically: a reader sees the old file or the
// new one, never half of one.
func (b Baseline) WriteFile(path string) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// A Change is how one scenario's verdict differs from its baseline.
type Change struct {
	Scenario string
	// Worse says the change is for the worse (the run fails on it);
	// otherwise it is an improvement or a note.
	Worse bool
	// What says what changed, e.g. "safe → unsafe (new: double-grant)".
	What string
}

// severity orders conclusive verdicts from best to worst.
var severity = map[string]int{Safe: 0, Starves: 1, Stuck: 2, Unsafe: 3}

// Compare lists how the verdicts vs differ from b, in their order: a
// verdict worse than its baseline's (safe → unsafe, stuck or starves, or
// any move up that order; conclusive → inconclusive; a kind of anomaly the
// baseline did not have; an inconclusive entry, which proved nothing, to
// unsafe, stuck or starves) is Worse; the reverse is an improvement; a
// scenario the baseline does not have is a note. Skipped verdicts are left
// out. A baseline of another subject judges nothing: see [Baseline.For].
func (b Baseline) Compare(vs []*results.Verdict) []Change {
	var out []Change
	for _, v := range vs {
		if v.Skipped != "" {
			continue
		}
		name := BaseName(v.Scenario)
		was, ok := b.Scenarios[name]
		if !ok {
			out = append(out, Change{Scenario: name, What: fmt.Sprintf("not in the baseline; observed %s", v.Observed)})
			continue
		}
		if c, changed := compareEntry(was, entryOf(v)); changed {
			c.Scenario = name
			out = append(out, c)
		}
	}
	return out
}

// For returns an error unless b was written for subject: another lock's
// baseline says nothing about this one.
func (b Baseline) For(subject string) error {
	if b.Subject != subject {
		return fmt.Errorf("the baseline was written for %s, this run puts %s through the scenarios (write one for it with --update-baseline)", b.Subject, subject)
	}
	return nil
}

// Judge judges v, a run of the lock b was written for, by b: a scenario in
// b expects "no worse than" its baseline verdict and does not match when
// it is worse (see [Baseline.Compare]), with v.Gate saying what got worse;
// one not in b keeps its expectation.
func (b Baseline) Judge(v *results.Verdict) {
	was, ok := b.Scenarios[BaseName(v.Scenario)]
	if !ok || v.Skipped != "" {
		return
	}
	v.Expect = "no worse than " + was.Observed
	if was.Observed == Inconclusive {
		v.Expect = "no worse than safe (the baseline proved nothing)"
	}
	if c, changed := compareEntry(was, entryOf(v)); changed && c.Worse {
		v.Matched = false
		v.Gate = "worse than the baseline: " + c.What
	}
}

// compareEntry says how now differs from was, if it does.
func compareEntry(was, now BaselineEntry) (Change, bool) {
	added := without(now.Anomalies, was.Anomalies)
	gone := without(was.Anomalies, now.Anomalies)
	if was.Observed == now.Observed && len(added) == 0 && len(gone) == 0 {
		return Change{}, false
	}
	var worse bool
	switch {
	case now.Observed == Inconclusive:
		worse = was.Observed != Inconclusive
	case was.Observed == Inconclusive:
		// It proved nothing and whitelists nothing, whatever it listed.
		worse = IsViolation(now.Observed)
		added, gone = now.Anomalies, nil
	default:
		worse = severity[now.Observed] > severity[was.Observed]
	}
	worse = worse || len(added) > 0
	what := was.Observed + " → " + now.Observed
	if was.Observed == now.Observed {
		what = now.Observed + ", anomalies changed"
	}
	if len(added) > 0 {
		what += " (new: " + strings.Join(added, ", ") + ")"
	}
	if len(gone) > 0 {
		what += " (gone: " + strings.Join(gone, ", ") + ")"
	}
	return Change{Worse: worse, What: what}, true
}

// without returns the elements of a that are not in b.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
