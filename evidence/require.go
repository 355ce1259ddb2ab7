package evidence

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lockpick/lockpick/checker"
)

// A Requirement is one fact every trial of a scenario must show for its
// verdict to count: proof that the lock was exercised and that the attack
// met it. Exactly one of Grants, Refused, Prevented, Fault, Anomaly and
// Waited is set; the other fields refine it. A scenario file lists them under
// `require:`, e.g.
//
//	require:
//	  - {grants: 5, after: kill n4}
//	  - {refused: acquire, error: acknowledged by enough replicas}
//	  - {prevented: stale-write}
//	  - {fault: restart, node: n3, key_before: held, key_after: absent}
//	  - {anomaly: double-grant, nodes: [n1, n2]}
//	  - {waited: acquire, max: 700ms}
type Requirement struct {
	// Grants asks for at least this many ok acquires, over all clients.
	// Without any grants requirement a trial needs at least one; grants: 0
	// says the scenario's clients are never told they hold the lock.
	Grants *int `json:"grants,omitempty" yaml:"grants"`
	// After counts grants only from when the first fault matching it took
	// effect: a fault kind ("kill") or a kind and its target ("kill n4"),
	// which names a fault aimed at that node too once it resolved there,
	// or an aimed target as written ("kill @master").
	After string `json:"after,omitempty" yaml:"after"`
	// With Grants or Refused, Node counts only the operations that node
	// took part in (e.g. the replica a failover promoted), and After (with
	// either) only those from when the first matching fault took effect.
	// Refused asks for an operation (acquire, release, extend, read or
	// write) that failed, or ended unknown, with an error containing Error
	// (any error, without one); "lost" counts the lock's notifications
	// that a lease was lost.
	Refused string `json:"refused,omitempty" yaml:"refused"`
	Error   string `json:"error,omitempty" yaml:"error"`
	// Unknown, with Refused, counts only the operations that ended
	// unknown (they may have taken effect: a timeout, a lost reply),
	// whatever the lock said.
	Unknown bool `json:"unknown,omitempty" yaml:"unknown"`
	// UntilGrant, with Refused (a Go duration, "2.5s"), asks that the
	// counted operations came before anyone was granted the lock (an
	// acquire's invoke that ended ok) and spanned at least this long, from
	// the first's invoke to the last's completion: the attack held the lock
	// off that long before it was first taken (a livelock the checker can
	// call one only after its StuckAfter).
	UntilGrant string `json:"until_grant,omitempty" yaml:"until_grant"`
	// Prevented asks for a violation the system stopped, of this kind
	// (stale-write: a write the resource refused by its fencing token).
	Prevented string `json:"prevented,omitempty" yaml:"prevented"`
	// Min is how many refused operations or prevented violations are
	// needed (default: 1), or, with anomaly, how many anomalies of that kind
	// involving the nodes (default: 0, only constraining those found).
	Min int `json:"min,omitempty" yaml:"min"`
	// Fault names a fault kind of the schedule; with Node, its first
	// occurrence on that node (resolved, or as aimed: "@master"). KeyBefore
	// and KeyAfter ("held" or "absent") say whether the lock's key was on
	// the node just before the fault hit it and once the fault took effect
	// (for a kill or a pause, once the node is back).
	Fault     string `json:"fault,omitempty" yaml:"fault"`
	Node      string `json:"node,omitempty" yaml:"node"`
	KeyBefore string `json:"key_before,omitempty" yaml:"key_before"`
	KeyAfter  string `json:"key_after,omitempty" yaml:"key_after"`
	// Lost, with a power-loss fault, says whether the node's disk dropped
	// unsynced data ("some") or had nothing to drop ("none").
	Lost string `json:"lost,omitempty" yaml:"lost"`
	// HolderRelease, with a fault, asks that the client that held the lock
	// when the fault hit (lockpick's record) let go only after lockpick saw
	// the fault's node serve again (its effective_s): the fault met a held
	// lock. And how the release ended: "ok" (it succeeded) or "refused" (the
	// service answered and refused it, e.g. "lock not held" once it had
	// forgotten the grant). A release that ended unknown (the service did
	// not answer) is neither.
	HolderRelease string `json:"holder_release,omitempty" yaml:"holder_release"`
	// Anomaly with Nodes says that an anomaly of this kind, when a trial
	// has one, involves every one of these nodes: the attack broke the
	// lock the way the scenario explains, not some other way. With Min and
	// no Nodes, at least Min anomalies of the kind, on any nodes.
	Anomaly string   `json:"anomaly,omitempty" yaml:"anomaly"`
	Nodes   []string `json:"nodes,omitempty" yaml:"nodes"`
	// Waited with Max (a Go duration, "700ms") says that every completed
	// operation of this kind (acquire only, for now) by a client, granted
	// or not, returned at most Max after its invoke, and that there was
	// one: a bounded wait gave up in time, and nothing was granted late.
	Waited string `json:"waited,omitempty" yaml:"waited"`
	Max    string `json:"max,omitempty" yaml:"max"`
}

// Key states of [Requirement].KeyBefore and KeyAfter, and of [Fault].
const (
	KeyHeld   = "held"
	KeyAbsent = "absent"
)

// Validate reports the first problem with r as a field name (as the
// scenario file spells it) and a message, or "", "" when r is well formed.
func (r Requirement) Validate() (field, msg string) {
	kinds := 0
	for _, set := range []bool{r.Grants != nil, r.Refused != "", r.Prevented != "", r.Fault != "", r.Anomaly != "", r.Waited != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds != 1:
		return "", "set exactly one of grants, refused, prevented, fault, anomaly and waited"
	case r.Grants != nil && *r.Grants < 0:
		return "grants", "must not be negative"
	case r.Min < 0:
		return "min", "must not be negative"
	case r.UntilGrant != "" && (r.Refused == "" || r.Refused == checker.FLost):
		return "until_grant", "only goes with refused of an operation"
	case r.UntilGrant != "" && !positiveDuration(r.UntilGrant):
		return "until_grant", fmt.Sprintf("must be a positive duration like 2s, not %q", r.UntilGrant)
	case r.After != "" && r.Grants == nil && r.Refused == "":
		return "after", "only goes with grants or refused"
	case r.Error != "" && r.Refused == "":
		return "error", "only goes with refused"
	case r.Unknown && (r.Refused == "" || r.Refused == checker.FLost):
		return "unknown", "only goes with refused of an operation"
	case r.Refused != "" && !slices.Contains([]string{checker.FAcquire, checker.FRelease, checker.FExtend, checker.FRead, checker.FWrite, checker.FLost}, r.Refused):
		return "refused", fmt.Sprintf("must be acquire, release, extend, read, write or lost, not %q", r.Refused)
	case r.Prevented != "" && r.Prevented != string(checker.StaleWrite):
		return "prevented", fmt.Sprintf("only stale-write can be prevented, not %q", r.Prevented)
	case r.Node != "" && r.Fault == "" && r.Grants == nil && r.Refused == "":
		return "node", "only goes with fault, grants or refused"
	case strings.HasPrefix(r.Node, "@") && r.Fault == "":
		return "node", fmt.Sprintf("operations are counted on a node by name (n1..), not %q: an aim names a fault's target", r.Node)
	case r.KeyBefore != "" && r.Fault == "":
		return "key_before", "only goes with fault"
	case r.KeyAfter != "" && r.Fault == "":
		return "key_after", "only goes with fault"
	case r.Lost != "" && r.Fault != "power-loss":
		return "lost", "only goes with fault: power-loss"
	case r.Lost != "" && r.Lost != LostSome && r.Lost != LostNone:
		return "lost", fmt.Sprintf("must be some or none, not %q", r.Lost)
	case r.HolderRelease != "" && r.Fault == "":
		return "holder_release", "only goes with fault"
	case r.HolderRelease != "" && r.HolderRelease != ReleaseOK && r.HolderRelease != ReleaseRefused:
		return "holder_release", fmt.Sprintf("must be ok or refused, not %q", r.HolderRelease)
	case r.Min != 0 && r.Refused == "" && r.Prevented == "" && r.Anomaly == "":
		return "min", "only goes with refused, prevented or anomaly"
	case r.Fault != "" && r.KeyBefore == "" && r.KeyAfter == "" && r.Lost == "" && r.HolderRelease == "":
		return "fault", "say what the node held: key_before and/or key_after (or, for a power loss, lost; or how the holder's release ended, holder_release)"
	case !keyState(r.KeyBefore):
		return "key_before", fmt.Sprintf("must be held or absent, not %q", r.KeyBefore)
	case !keyState(r.KeyAfter):
		return "key_after", fmt.Sprintf("must be held or absent, not %q", r.KeyAfter)
	case r.Anomaly != "" && len(r.Nodes) == 0 && r.Min == 0:
		return "nodes", "name the nodes the anomaly involves (or ask for at least min of them, on any nodes)"
	case len(r.Nodes) > 0 && r.Anomaly == "":
		return "nodes", "only goes with anomaly"
	case r.Waited != "" && r.Waited != checker.FAcquire:
		return "waited", fmt.Sprintf("only acquire waits are bounded, not %q", r.Waited)
	case r.Max != "" && r.Waited == "":
		return "max", "only goes with waited"
	case r.Waited != "" && !positiveDuration(r.Max):
		return "max", fmt.Sprintf("must be a positive duration like 700ms, not %q", r.Max)
	}
	if r.Anomaly != "" && !slices.Contains(checker.Kinds(), checker.Kind(r.Anomaly)) {
		return "anomaly", fmt.Sprintf("unknown anomaly kind %q", r.Anomaly)
	}
	return "", ""
}

// Values of [Requirement].Lost.
const (
	LostSome = "some"
	LostNone = "none"
)

// Values of [Requirement].HolderRelease.
const (
	ReleaseOK      = "ok"
	ReleaseRefused = "refused"
)

// lostCheck says what a power loss dropped (lost: bytes, nil if unknown)
// and whether that is what want asks.
func lostCheck(want string, lost *int64) (found string, met bool) {
	switch {
	case lost == nil:
		return "unknown what it lost", false
	case *lost > 0:
		return fmt.Sprintf("%d unsynced bytes lost", *lost), want == LostSome
	}
	return "nothing unsynced lost", want == LostNone
}

func keyState(s string) bool { return s == "" || s == KeyHeld || s == KeyAbsent }

// positiveDuration reports whether s is a Go duration above 0.
func positiveDuration(s string) bool {
	d, err := time.ParseDuration(s)
	return err == nil && d > 0
}

// String says what r asks for, in words.
func (r Requirement) String() string {
	min := max(r.Min, 1)
	switch {
	case r.Grants != nil:
		return fmt.Sprintf("at least %s%s", grantsWord(*r.Grants), where(r))
	case r.Refused == checker.FLost && r.Error == "":
		return fmt.Sprintf("at least %d lost-lease notification(s)%s", min, where(r))
	case r.Refused == checker.FLost:
		return fmt.Sprintf("at least %d lost-lease notification(s) with %q%s", min, r.Error, where(r))
	case r.Unknown:
		return fmt.Sprintf("at least %d %s ended unknown%s%s", min, r.Refused, withError(r.Error), where(r))
	case r.Refused != "" && r.Error == "":
		return fmt.Sprintf("at least %d %s failed or ended unknown%s", min, r.Refused, where(r))
	case r.Refused != "":
		return fmt.Sprintf("at least %d %s refused with %q%s", min, r.Refused, r.Error, where(r))
	case r.Prevented != "":
		return fmt.Sprintf("at least %d prevented %s", min, r.Prevented)
	case r.Fault != "":
		var want []string
		if r.KeyBefore != "" {
			want = append(want, "key "+r.KeyBefore+" when it hit")
		}
		if r.KeyAfter != "" {
			want = append(want, "key "+r.KeyAfter+" after it")
		}
		if r.Lost != "" {
			want = append(want, r.Lost+" unsynced data lost")
		}
		if r.HolderRelease != "" {
			want = append(want, "the holder's release "+r.HolderRelease)
		}
		return fmt.Sprintf("%s: %s", strings.TrimSpace(r.Fault+" "+r.Node), strings.Join(want, ", "))
	case r.Anomaly != "" && r.Min > 0 && len(r.Nodes) == 0:
		return fmt.Sprintf("at least %d %s", r.Min, r.Anomaly)
	case r.Anomaly != "" && r.Min > 0:
		return fmt.Sprintf("at least %d %s involving %s", r.Min, r.Anomaly, strings.Join(r.Nodes, " and "))
	case r.Anomaly != "":
		return fmt.Sprintf("a %s, if any, involves %s", r.Anomaly, strings.Join(r.Nodes, " and "))
	case r.Waited != "":
		return fmt.Sprintf("every %s returned within %s", r.Waited, r.Max)
	}
	return "nothing"
}

// A Check is a requirement with what the trial showed.
type Check struct {
	// Require is the requirement in words.
	Require string `json:"require"`
	// Found is what the trial showed, in words.
	Found string `json:"found"`
	// Met reports whether the requirement held.
	Met bool `json:"met"`
}

// check evaluates r against the trial.
func (in *Input) check(r Requirement) Check {
	c := Check{Require: r.String()}
	min := max(r.Min, 1)
	from, ok := int64(0), true
	if r.After != "" {
		var f *Fault
		if f, ok = in.firstFired(r.After); ok {
			from = in.Start + int64(*f.since()*1e9)
		}
	}
	// counts tells whether e, an event of the kind asked for, is in the
	// window (After) and on the node (Node) asked for.
	counts := func(e checker.Event) bool {
		return e.Time >= from && (r.Node == "" || slices.Contains(splitNodes([]string{e.Node}), r.Node))
	}
	switch {
	case (r.Grants != nil || r.Refused != "") && !ok:
		c.Found = r.After + " never fired"
	case r.Grants != nil:
		n := 0
		for _, e := range in.History {
			if e.F == checker.FAcquire && e.Type == checker.OK && counts(e) {
				n++
			}
		}
		c.Found, c.Met = grantsWord(n), n >= *r.Grants
	case r.Refused != "":
		c.Found, c.Met = in.refused(r, counts)
	case r.Prevented != "":
		n := in.Result.PreventedCounts()[checker.Kind(r.Prevented)]
		c.Found, c.Met = fmt.Sprintf("%d prevented", n), n >= min
	case r.Fault != "":
		f, ok := in.first(strings.TrimSpace(r.Fault + " " + r.Node))
		switch {
		case !ok && in.aimedAt(r.Fault):
			c.Found = "no " + r.Fault + " landed on " + r.Node
		case !ok:
			c.Found = "no such fault in the schedule"
		case f.Fired == nil:
			c.Found = "the fault never fired"
		default:
			c.Found = fmt.Sprintf("key %s when it hit, %s after it", orUnknown(f.KeyBefore), orUnknown(f.KeyAfter))
			c.Met = (r.KeyBefore == "" || r.KeyBefore == f.KeyBefore) && (r.KeyAfter == "" || r.KeyAfter == f.KeyAfter)
			if r.Lost != "" {
				found, met := lostCheck(r.Lost, f.Lost)
				c.Found += ", " + found
				c.Met = c.Met && met
			}
			if r.HolderRelease != "" {
				found, met := in.holderRelease(*f, r.HolderRelease)
				c.Found += ", " + found
				c.Met = c.Met && met
			}
		}
	case r.Anomaly != "":
		c.Met, c.Found = true, "none found"
		n := 0
		for _, a := range in.Result.Anomalies {
			if a.Kind != checker.Kind(r.Anomaly) {
				continue
			}
			n++
			involved := splitNodes(a.Nodes)
			c.Found = "involves " + strings.Join(involved, ", ")
			for _, n := range r.Nodes {
				if !slices.Contains(involved, n) {
					c.Met = false
				}
			}
			if !c.Met {
				break
			}
		}
		if c.Met && n < r.Min {
			c.Met, c.Found = false, fmt.Sprint(n)
		}
	case r.Waited != "":
		c.Found, c.Met = in.longestWait(r)
	}
	return c
}

// refused counts the operations r.Refused that failed (or ended unknown)
// as r asks, among those counts admits, and whether there were enough:
// with UntilGrant, only those before the first grant, spanning that long.
func (in *Input) refused(r Requirement, counts func(checker.Event) bool) (string, bool) {
	until, span := int64(math.MaxInt64), time.Duration(0)
	if r.UntilGrant != "" {
		until = firstGrant(in.History)
		span, _ = time.ParseDuration(r.UntilGrant)
	}
	n, first, last := 0, int64(0), int64(0)
	eachCompletion(in.History, r.Refused, func(e checker.Event, invoked int64, ok bool) {
		if e.Time >= until || !(e.Type == checker.Info || (e.Type == checker.Fail && !r.Unknown)) ||
			!strings.Contains(e.Error, r.Error) || !counts(e) {
			return
		}
		start := e.Time // from its invoke, if the history has one
		if ok {
			start = invoked
		}
		if n == 0 || start < first {
			first = start
		}
		n, last = n+1, max(last, e.Time)
	})
	found := fmt.Sprintf("%d refused", n)
	if r.UntilGrant == "" {
		return found, n >= max(r.Min, 1)
	}
	lasted := time.Duration(last - first) // 0 when none counted
	found += fmt.Sprintf(" over %s before the first grant", lasted.Round(time.Millisecond))
	if until == math.MaxInt64 {
		found += " (nobody was granted it)"
	}
	return found, n >= max(r.Min, 1) && lasted >= span
}

// firstGrant returns the invoke time of the earliest acquire by a client
// that ended ok (math.MaxInt64 if none did): from then on, someone may have
// held the lock.
func firstGrant(h []checker.Event) int64 {
	first := int64(math.MaxInt64)
	eachCompletion(h, checker.FAcquire, func(e checker.Event, invoked int64, ok bool) {
		if ok && e.Type == checker.OK {
			first = min(first, invoked)
		}
	})
	return first
}

// eachCompletion calls fn for every completion of an operation f by a
// client in h, in order, with its invoke's time (ok false if h has none).
func eachCompletion(h []checker.Event, f string, fn func(e checker.Event, invoked int64, ok bool)) {
	open := map[int]int64{} // process -> its open invoke's time
	for _, e := range h {
		if e.F != f || e.Process < 0 {
			continue
		}
		if e.Type == checker.Invoke {
			open[e.Process] = e.Time
			continue
		}
		t, ok := open[e.Process]
		delete(open, e.Process)
		fn(e, t, ok)
	}
}

// longestWait finds the longest completed operation r.Waited by a client,
// from its invoke to its completion, and whether none exceeded r.Max (and
// there was one).
func (in *Input) longestWait(r Requirement) (string, bool) {
	limit, _ := time.ParseDuration(r.Max)
	var longest time.Duration
	var who checker.Event
	n := 0
	eachCompletion(in.History, r.Waited, func(e checker.Event, invoked int64, ok bool) {
		if !ok {
			return
		}
		n++
		if d := time.Duration(e.Time - invoked); d > longest {
			longest, who = d, e
		}
	})
	if n == 0 {
		return "no " + r.Waited + " completed", false
	}
	return fmt.Sprintf("the longest, process %d's (%s), returned after %s", who.Process, who.Type, longest.Round(time.Millisecond)), longest <= limit
}

// holderRelease checks that the client holding the lock when f hit (by
// lockpick's record) invoked its release only after f's node served again
// (f's effect, as lockpick observed it), and that the release ended as
// want says: the fault met a held lock, and the service answered it.
func (in *Input) holderRelease(f Fault, want string) (found string, met bool) {
	at := in.Start + int64(*f.Fired*1e9)
	holders := checker.Holders(in.History, at)
	if len(holders) == 0 {
		return "no client held the lock when it hit", false
	}
	holder := holders[0]
	var invoked int64
	for _, e := range in.History {
		if e.Time <= at || e.Process != holder || e.F != checker.FRelease {
			continue
		}
		if e.Type == checker.Invoke {
			invoked = e.Time
			continue
		}
		var ended string // unknown: the service may not have answered at all
		switch e.Type {
		case checker.OK:
			ended = ReleaseOK
		case checker.Fail:
			ended = ReleaseRefused
		}
		when, back := "the node was not seen serving again", false
		if f.Effective != nil {
			back = invoked > in.Start+int64(*f.Effective*1e9)
			when = fmt.Sprintf("after the node served again at +%.3fs", *f.Effective)
			if !back {
				when = fmt.Sprintf("before the node served again at +%.3fs", *f.Effective)
			}
		}
		found = fmt.Sprintf("holder c%d's release invoked at %s, %s, ended %s at %s", holder, in.at(invoked), when, e.Type, in.at(e.Time))
		if e.Type != checker.OK {
			found += ": " + e.Error
		}
		return found, back && ended == want
	}
	return fmt.Sprintf("holder c%d's release never completed", holder), false
}

// at returns t, a history time, as seconds from the trial's start: "+1.234s".
func (in *Input) at(t int64) string { return fmt.Sprintf("+%.3fs", float64(t-in.Start)/1e9) }

// where says on which node and after which fault a grants or refused
// requirement counts, e.g. " on n5 after kill fired".
func where(r Requirement) string {
	s := ""
	if r.Node != "" {
		s += " on " + r.Node
	}
	if r.After != "" {
		s += " after " + r.After + " fired"
	}
	if r.UntilGrant != "" {
		s += ", for " + r.UntilGrant + " before anyone was granted the lock"
	}
	return s
}

// withError says " with" the error text asked for, if any.
func withError(text string) string {
	if text == "" {
		return ""
	}
	return fmt.Sprintf(" with %q", text)
}

// grantsWord returns "1 grant" or "n grants".
func grantsWord(n int) string {
	if n == 1 {
		return "1 grant"
	}
	return fmt.Sprintf("%d grants", n)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// splitNodes returns the node names in ns, where one entry may name several
// ("n1,n2,n3" for a Redlock grant), sorted and without repeats.
func splitNodes(ns []string) []string {
	var out []string
	for _, n := range ns {
		for _, p := range strings.Split(n, ",") {
			if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// matches reports whether f is what a requirement names: a kind, or a kind
// and its target ("kill n4") as resolved or as aimed ("kill @master").
func (f *Fault) matches(what string) bool {
	kind, target, _ := strings.Cut(what, " ")
	return f.Fault == kind && (target == "" || f.Target == target || (f.Aim != "" && f.Aim == target))
}

// since returns when f took effect, or when it fired if that is unknown.
func (f *Fault) since() *float64 {
	if f.Effective != nil {
		return f.Effective
	}
	return f.Fired
}

// first returns the first fault of the schedule matching what.
func (in *Input) first(what string) (*Fault, bool) {
	for i := range in.Faults {
		if in.Faults[i].matches(what) {
			return &in.Faults[i], true
		}
	}
	return nil, false
}

// aimedAt reports whether the schedule has a fault of this kind aimed by
// the system's state, which may have landed elsewhere than a node named.
func (in *Input) aimedAt(kind string) bool {
	for _, f := range in.Faults {
		if f.Fault == kind && f.Aim != "" {
			return true
		}
	}
	return false
}

// firstFired returns the earliest fault matching what that fired.
func (in *Input) firstFired(what string) (*Fault, bool) {
	var best *Fault
	for i := range in.Faults {
		f := &in.Faults[i]
		if f.matches(what) && f.Fired != nil && (best == nil || *f.since() < *best.since()) {
			best = f
		}
	}
	return best, best != nil
}
