package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockpick/lockpick/checker/internal/model"
)

// Check checks h for every anomaly kind with no time limit and returns the
// result. A nil opt means the defaults of [Options].
func Check(h History, opt *Options) Result { return CheckTimeout(h, opt, 0) }

// CheckTimeout is like [Check], but gives the linearizability searches at
// most timeout in total (0 means no limit). A search that times out makes
// the verdict Unknown unless an anomaly was found anyway.
func CheckTimeout(h History, opt *Options, timeout time.Duration) Result {
	return check(h, opt, timeout)
}

// A run is the state of one check: the history, rebuilt into operations and
// leases.
type run struct {
	h       History
	opt     Options
	clock   clock
	ops     []op
	leases  []*lease
	last    int64 // latest event time
	ignored int   // completions without an invoke
}

func newRun(h History, opt *Options) *run {
	r := &run{h: h, opt: opt.withDefaults()}
	if len(h) > 0 {
		origin, last := h[0].Time, h[0].Time
		for i := range h {
			origin, last = min(origin, h[i].Time), max(last, h[i].Time)
		}
		r.clock, r.last = clock(origin), last
	}
	r.ops, r.ignored = ops(h)
	r.leases = leases(r.ops)
	return r
}

func check(h History, opt *Options, timeout time.Duration) Result {
	start := time.Now()
	var deadline time.Time
	if timeout > 0 {
		deadline = start.Add(timeout)
	}
	r := newRun(h, opt)
	res := Result{Origin: int64(r.clock), Ignored: r.ignored}
	res.Anomalies = doubleGrants(r.leases, r.clock)
	res.Anomalies = append(res.Anomalies, r.models(res.Anomalies, deadline, &res.TimedOut)...)
	stale, prevented := r.staleWrites()
	res.Anomalies = append(res.Anomalies, stale...)
	res.Prevented = prevented
	res.Anomalies = append(res.Anomalies, r.stuckLocks()...)
	res.Anomalies = append(res.Anomalies, r.starvations()...)
	slices.SortStableFunc(res.Anomalies, byFirstOp)
	res.Verdict = verdict(res)
	res.Elapsed = time.Since(start)
	return res
}

// models runs the porcupine searches that can still find something: the
// lease model on every lock key where the interval check found no double
// grant (a cross-check; the two rules are equivalent, see doc.go), and the
// counter model on every resource key without two ok writes of one value
// (those are lost updates already, and illegal searches are the slow ones).
// Searches that time out are named in timedOut.
func (r *run) models(direct []Anomaly, deadline time.Time, timedOut *[]string) []Anomaly {
	var found []Anomaly
	dg := make(map[string]bool)
	for _, a := range direct {
		dg[a.Key] = true
	}
	writes := r.okWrites()
	var todo []*model.Part
	for _, p := range r.parts() {
		switch {
		case p.Lease && dg[p.Key]:
		case !p.Lease:
			if dups := r.duplicateWrites(p.Key, writes[p.Key]); len(dups) > 0 {
				found = append(found, dups...)
				continue
			}
			fallthrough
		default:
			todo = append(todo, p)
		}
	}
	model.Search(todo, until(deadline))
	for _, p := range todo {
		switch {
		case p.Res == porcupine.Unknown:
			*timedOut = append(*timedOut, p.What())
		case p.Res != porcupine.Illegal:
		case p.Lease:
			found = append(found, Anomaly{Kind: DoubleGrant, Key: p.Key, Message: fmt.Sprintf(
				"the lease model found no order of the grants of lock %q, but the interval check found no overlap; please report this history", p.Key)})
		default:
			found = append(found, r.firstUnordered(p, until(deadline)))
		}
	}
	return found
}

// until returns the time left before deadline, 0 for no deadline, and a
// nanosecond if it has passed (porcupine treats 0 as no limit).
func until(deadline time.Time) time.Duration {
	if deadline.IsZero() {
		return 0
	}
	return max(time.Until(deadline), 1)
}

func verdict(r Result) Verdict {
	switch {
	case len(r.Anomalies) > 0:
		return Illegal
	case len(r.TimedOut) > 0:
		return Unknown
	}
	return Ok
}
