package results

import (
	"encoding/json"
	"io"

	"github.com/lockpick/lockpick/evidence"
)

// A Verdict is the outcome of one scenario run over several trials, as
// written to verdict.json.
type Verdict struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Trials   int    `json:"trials"`
	// Shard is "i/n" when this folder holds one shard of a run (its trials
	// keep the numbers and seeds of the whole run), "" for a whole run.
	Shard string `json:"shard,omitempty"`
	// Expect is the scenario's expectation: safe, unsafe, stuck or starves.
	Expect string `json:"expect"`
	// Observed is what the trials showed: inconclusive if any trial proves
	// nothing (see its evidence), else unsafe if any trial had a safety
	// anomaly, else stuck if any had a stuck lock, else safe. Package judge
	// decides it, Matched and every count below.
	Observed string `json:"observed"`
	// Matched reports whether Observed meets Expect.
	Matched bool `json:"matched"`
	// Gate says why a run of the user's own lock failed its baseline, e.g.
	// "worse than the baseline: safe → unsafe (new: double-grant)".
	Gate string `json:"gate,omitempty"`
	// Anomalies counts anomalies by kind over all trials, inconclusive ones
	// and tolerated kinds included.
	Anomalies map[string]int `json:"anomalies"`
	// Tolerate is the scenario's tolerate list: kinds counted in Anomalies
	// but left out of Observed, and out of a baseline's comparison.
	Tolerate []string `json:"tolerate,omitempty"`
	// TrialsWithAnomaly counts trials whose history shows any anomaly
	// (those in Anomalies); TrialsViolated the trials observed unsafe,
	// stuck or starves; TrialsInconclusive the trials that prove nothing.
	TrialsWithAnomaly  int `json:"trials_with_anomaly"`
	TrialsViolated     int `json:"trials_violated"`
	TrialsInconclusive int `json:"trials_inconclusive"`
	// WallSeconds is the wall time of all trials; WallSecondsPerTrial the mean.
	WallSeconds         float64 `json:"wall_seconds"`
	WallSecondsPerTrial float64 `json:"wall_seconds_per_trial"`
	// Examples holds the first anomaly of every kind, in plain words, and
	// ExamplesLeft counts the anomalies not among them.
	Examples     []string `json:"examples,omitempty"`
	ExamplesLeft int      `json:"examples_left,omitempty"`
	// TrialResults has one entry per trial (per round, for a soak).
	TrialResults []Trial `json:"trial_results"`
	// Skipped, when set, says why the scenario was not run (it does not
	// fit the lock under test); such a verdict has no trials and no folder.
	Skipped string `json:"skipped,omitempty"`
	// Soak is set for a soak run (lockpick run --soak), whose trials are
	// the rounds of one long run.
	Soak *Soak `json:"soak,omitempty"`

	_ struct{} // disallow positional literals, for extensibility
}

// A Trial is the outcome of one trial of a run.
type Trial struct {
	Trial int    `json:"trial"`
	Seed  uint64 `json:"seed"`
	// Observed is safe, unsafe, stuck, starves or inconclusive; Reason says why an
	// inconclusive trial proves nothing.
	Observed  string         `json:"observed"`
	Reason    string         `json:"reason,omitempty"`
	Anomalies map[string]int `json:"anomalies,omitempty"`
	// Evidence is what the trial proves.
	Evidence    evidence.Evidence `json:"evidence"`
	WallSeconds float64           `json:"wall_seconds"`
	// FirstViolationSeconds is when, from the trial's start, the first
	// anomaly that counts against the lock happened (absent if none did).
	FirstViolationSeconds float64 `json:"first_violation_s,omitempty"`
	// Dir is the trial's folder, relative to the run folder.
	Dir string `json:"dir"`
}

// Write writes v as indented JSON.
func (v *Verdict) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// A Soak sums up a soak run: one topology, the scenario's fault schedule
// played round after round, the history checked as it was recorded.
type Soak struct {
	// PlannedSeconds is the soak's requested length; WallSeconds how long
	// it ran.
	PlannedSeconds float64 `json:"planned_seconds"`
	WallSeconds    float64 `json:"wall_seconds"`
	// Rounds is the number of rounds in the verdict (a round cut short
	// without an anomaly is left out).
	Rounds int `json:"rounds"`
	// Events is the number of events recorded and checked.
	Events int `json:"events"`
	// Anomalies counts the anomalies found, by kind.
	Anomalies map[string]int `json:"anomalies"`
	// PeakRSSBytes is the peak resident memory of the lockpick process
	// (not of the Redis nodes).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// Partial is true when the soak ended before its planned length;
	// Stopped then says why: "interrupted" or "anomaly" (--stop-on-anomaly).
	Partial bool   `json:"partial,omitempty"`
	Stopped string `json:"stopped,omitempty"`
	// CheckNote is set when the streamed check may differ from a check of
	// the whole history (see checker.ErrNeedHistory).
	CheckNote string `json:"check_note,omitempty"`
	// EverySeconds is how often a round was to start (--every); a round
	// starts later when the one before, its leases and putting the
	// topology back take longer.
	EverySeconds float64 `json:"every_seconds"`
	// Restored counts the rounds after which the topology had to be put
	// back (a failover undone, a slot moved back).
	Restored int `json:"restored"`
	// FirstAnomaly is the first round with an anomaly (0: none), and Window
	// that round's history, relative to the run folder: a standalone file
	// that `lockpick check` reproduces the anomaly from.
	FirstAnomaly int    `json:"first_anomaly,omitempty"`
	Window       string `json:"window,omitempty"`
	// Memory samples the lockpick process's memory as the soak runs: at 1,
	// 5, 10, 15, 30, 45 and 60 minutes, every 30 minutes after, and at the
	// end.
	Memory []MemorySample `json:"memory,omitempty"`
}

// A MemorySample is the lockpick process's memory at one point of a soak.
type MemorySample struct {
	AtSeconds float64 `json:"at_seconds"`
	// RSSBytes is the resident memory then (not the peak); HeapBytes the
	// Go heap in use.
	RSSBytes  int64 `json:"rss_bytes"`
	HeapBytes int64 `json:"heap_bytes"`
}
