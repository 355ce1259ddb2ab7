package checker

import "time"

// A Kind names a class of anomaly.
type Kind string

// The anomaly kinds; see the package comment for their rules. A shared
// token is always reported beside the double grant of the same leases.
const (
	DoubleGrant Kind = "double-grant" // a lock granted while another process's lease was valid
	StaleWrite  Kind = "stale-write"  // a write by a holder whose lease had expired after someone else was granted
	LostUpdate  Kind = "lost-update"  // the resource's reads and writes are not linearizable as increments
	StuckLock   Kind = "stuck-lock"   // the lock stayed unavailable well past every lease
	Starvation  Kind = "starvation"   // a process never acquired although others did
	SharedToken Kind = "shared-token" // one token handed to two processes whose leases overlapped
)

// Kinds returns every anomaly kind, in the order of the constants above: the
// words a scenario's tolerate: and require: may name.
func Kinds() []Kind {
	return []Kind{DoubleGrant, StaleWrite, LostUpdate, StuckLock, Starvation, SharedToken}
}

// A Verdict is the outcome of a check. It prints and serializes as is.
type Verdict string

// The verdicts, as in porcupine.
const (
	Ok      Verdict = "ok"      // no anomaly, and every search completed
	Illegal Verdict = "illegal" // at least one anomaly
	Unknown Verdict = "unknown" // no anomaly found, but a search timed out
)

// A Window is an interval during which a process certainly held a lease, in
// monotonic nanoseconds. Start is the acquire's ok time and End the lease's
// end (deadline or release invoke); see the package comment.
type Window struct {
	Process int      `json:"process"`
	Start   int64    `json:"start"`
	End     int64    `json:"end"`
	Node    string   `json:"node,omitempty"`
	Token   string   `json:"token,omitempty"`
	Fence   int64    `json:"fence,omitempty"`
	_       struct{} // disallow positional literals, for extensibility
}

// An Anomaly is one violation found in a history, with the evidence: the
// processes, the history indexes of the events involved, the lease windows
// and the nodes, and a message in plain words.
type Anomaly struct {
	Kind      Kind   `json:"kind"`
	Key       string `json:"key,omitempty"`
	Processes []int  `json:"processes"`
	// Ops are the history indexes (Event.Index) of the events involved; of
	// a lease's renewals, or of a run of failed acquires, the first ten and
	// the last ten.
	Ops     []int    `json:"ops"`
	Windows []Window `json:"windows,omitempty"`
	Nodes   []string `json:"nodes,omitempty"`
	// Prevented is true for a violation the system stopped, such as a stale
	// write the resource rejected by its fencing token. Prevented anomalies
	// are listed in [Result].Prevented, never in [Result].Anomalies.
	Prevented bool     `json:"prevented,omitempty"`
	Message   string   `json:"message"`
	_         struct{} // disallow positional literals, for extensibility
}

// A Result is the outcome of [Check].
type Result struct {
	// Verdict is Illegal if Anomalies is not empty, else Unknown if any
	// search timed out, else Ok.
	Verdict Verdict `json:"verdict"`
	// Anomalies are the violations found, ordered by time.
	Anomalies []Anomaly `json:"anomalies"`
	// Prevented are violations the system stopped (a fenced stale write).
	// They do not affect the verdict.
	Prevented []Anomaly `json:"prevented,omitempty"`
	// TimedOut names the searches that did not finish in time, such as
	// "counter model on \"counter\"".
	TimedOut []string `json:"timed_out,omitempty"`
	// Ignored counts completion events without a matching invoke, which
	// the check skipped.
	Ignored int `json:"ignored,omitempty"`
	// Origin is the earliest event time in the history (monotonic ns); the
	// "+1.204s" times in messages are relative to it.
	Origin int64 `json:"origin"`
	// Elapsed is how long the check took.
	Elapsed time.Duration `json:"elapsed_ns"`
	_       struct{}      // disallow positional literals, for extensibility
}

// Counts returns the number of anomalies of each kind found, without the
// prevented ones. Kinds with no anomaly are absent.
func (r Result) Counts() map[Kind]int { return count(r.Anomalies) }

// PreventedCounts returns the number of prevented anomalies of each kind.
func (r Result) PreventedCounts() map[Kind]int { return count(r.Prevented) }

func count(as []Anomaly) map[Kind]int {
	m := make(map[Kind]int)
	for _, a := range as {
		m[a.Kind]++
	}
	return m
}

// ObservedAt returns when anomaly a happened in h: for a double grant or a
// shared token, the start of the first overlap of its leases' windows;
// otherwise the latest time among the events it names. False when it names
// none of h's events.
func ObservedAt(h History, a Anomaly) (int64, bool) {
	if at, ok := firstOverlap(a.Windows); (a.Kind == DoubleGrant || a.Kind == SharedToken) && ok {
		return at, true
	}
	var at int64
	found := false
	for _, i := range a.Ops {
		if i < 0 || i >= len(h) || h[i].Index != i {
			continue
		}
		at, found = max(at, h[i].Time), true
	}
	return at, found
}

// firstOverlap returns the earliest instant two windows of different
// processes both cover.
func firstOverlap(ws []Window) (int64, bool) {
	var at int64
	found := false
	for i, x := range ws {
		for _, y := range ws[i+1:] {
			start := max(x.Start, y.Start)
			if x.Process != y.Process && start < min(x.End, y.End) && (!found || start < at) {
				at, found = start, true
			}
		}
	}
	return at, found
}
