package checker

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockpick/lockpick/checker/internal/model"
)

// A Stream checks a history as it is recorded, one event at a time, and
// keeps only what later events can still change: open operations, leases
// that are held or that something still refers to, and short summaries of
// failure runs. Close gives the [Result] that [Check] gives for the same
// events. The zero Stream is not usable; call [NewStream].
//
// How it keeps Check's exact answer is in the block comment of
// stream.go; what it cannot keep, it says (see [ErrNeedHistory]).
type Stream struct {
	opt     Options
	start   time.Time
	events  int
	origin  int64
	last    int64 // the latest time added
	window  int64 // Options.Reorder
	late    int64 // the most an event came before one added earlier
	err     error // the error that stopped Add
	closed  bool
	res     Result
	resErr  error
	seq     int // list position of the next operation
	ignored int
	pending int // events since the last advance
	ended   bool

	procs  map[int]*proc
	lb     *leaseBuilder
	keys   map[string]*lockKey
	ctrs   map[string]*counterKey
	ttl    int64        // MaxTTL, or the longest lease so far
	writes []*sop       // writes waiting to be judged
	stales []staleCase  // stale writes waiting for their leases to end
	pairs  []grantPair  // double grants waiting for their leases to end
	found  []Anomaly    // anomalies proven so far
	saved  []staleFound // prevented stale writes, with their list position
	why    []string     // why only the whole history gives the exact result: the first maxWhy reasons
	more   bool         // and there were others
	todo   []sweepWin   // scratch for sweeps
	pins   []*lease     // scratch for forget
	ctrq   ctrQueue     // reads and writes for the counter rule, by time
	ctrSeq int
}

// How the stream keeps Check's answer.
//
// Operations are paired as ops pairs them, and each process's operations
// go to the lease rules in its invoke order as soon as they are final
// (completed, or left unknown by the process's next invoke): a process's
// leases depend on its own operations alone. The horizon is the earliest
// invoke of an operation not yet applied, or the time of the last event:
// whatever is still to come (a window, a cut at a release's invoke, a new
// lease) happens at or after it. So
//
//   - windows that start before the horizon are swept in the order Check
//     sweeps them (start, then lease), and an overlap is reported once both
//     leases have ended, with their final windows;
//   - tries of a key that completed before the horizon are decided as
//     stuckLocks decides them, the holds that start before each absorbed;
//     a try after the acquire of a lease still valid at the horizon found
//     the key busy, and a lease past its deadline unreleased holds until
//     that deadline (decide says when that needs checking);
//   - a write invoked before the horizon is judged by judgeWrite, with the
//     leases it can name (forget keeps those a write to come can name); the lease it was written under then has its final
//     windows up to the write, unless it has no deadline and may yet be cut
//     where its holder was last seen, in which case the write waits;
//   - a starving process counts the leases granted to others while it
//     fails, and is decided when no lease to come can start before its
//     last failure;
//   - the counter model is replaced by the counter rule (counterrule.go).
//
// Two things only the whole history knows: MaxTTL, when Options do not
// set it (the longest lease; decisions use the longest so far and record
// the range of final values that leaves them unchanged), and the
// explanation of a lost update (porcupine's longest order). When they
// matter, Close says so with ErrNeedHistory.

// advanceEvery is how many events the stream takes between two attempts
// to decide what the horizon allows. Tests set it lower.
var advanceEvery = 512

var (
	// ErrTimeOrder is returned by [Stream.Add] for an event earlier than
	// one before it: a stream pairs and decides in time order.
	ErrTimeOrder = errors.New("checker: event earlier than the one before it")
	// ErrNeedHistory is returned by [Stream.Close] when the stream's result
	// may differ from [Check]'s (events out of time order, a lost update
	// that only porcupine's search can explain, MaxTTL not set and learned
	// too late); check the whole history for the exact result.
	ErrNeedHistory = errors.New("checker: only the whole history gives the exact result")
)

// A sop is an operation of a stream, with what the counter rule and the
// stale-write rule noted at its invoke.
type sop struct {
	op
	final       bool
	invKey      string
	before      model.Place // latest counter place completed before the invoke
	hasBefore   bool
	fenceBefore model.Place // highest fence accepted before the invoke, in v
	hasFence    bool
}

// A proc is a process: its open operation on each thread, its operations
// not yet applied, in invoke order, and its leases by start.
type proc struct {
	calls, extends *sop
	queue          []*sop
	head           int
	leases         []*lease
}

// A lockKey is what the stream keeps of one lock key.
type lockKey struct {
	name    string
	open    []*lease         // leases still held
	sweep   []*lease         // leases with windows not yet swept
	active  []sweepWin       // swept windows that may still overlap
	byStart []*lease         // leases a write may yet name as a successor, by start
	recent  []*lease         // leases whose acquire is at or after the horizon
	holds   []hold           // holds not yet absorbed
	tries   []*op            // tries not yet decided
	stuck   stuckKey         // the stuck-lock rule
	starve  map[int]*starver // each process's current run of failed acquires
	ended   []*starver       // runs an unknown acquire ended, not yet decided
	settled map[int]bool     // processes that start no more runs: granted, or starved
	starved map[int]bool     // processes whose starvation is reported
	later   []stuckCase      // stuck locks that began under a lease not yet ended
}

// A sweepWin is window i of lease l.
type sweepWin struct {
	l     *lease
	i     int
	start int64
}

func (w sweepWin) end() int64 { return w.l.windows[w.i].end }

// A grantPair is an overlap of two leases' windows, a before b.
type grantPair struct{ a, b sweepWin }

type staleFound struct {
	seq int
	a   Anomaly
}

// A starver is a run of a process's failed acquires of a key, from first
// to last (nil before its first failure), after its unknown acquire after
// (nil if none).
type starver struct {
	process     int
	n           int
	first, last *op
	after       *op
	frozen      bool     // an unknown acquire ended the run
	granted     int      // leases to others from first's invoke to last's completion
	others      []int    // their processes
	later       []*lease // leases to others that start after last
}

// NewStream returns a Stream that checks with opt; nil means the defaults
// of [Options].
func NewStream(opt *Options) *Stream {
	s := &Stream{opt: opt.withDefaults(), start: time.Now(), procs: make(map[int]*proc), lb: newLeaseBuilder(),
		keys: make(map[string]*lockKey), ctrs: make(map[string]*counterKey)}
	s.ttl = int64(s.opt.MaxTTL)
	s.window = int64(s.opt.Reorder)
	return s
}

// Add feeds e, the next event of the history. It returns [ErrTimeOrder]
// (wrapped) if e is earlier than an event before it by more than
// [Options].Reorder; the stream then takes no more events, and Close
// reports the events before e.
func (s *Stream) Add(e Event) error {
	if s.closed {
		panic("checker: Stream.Add after Close")
	}
	if s.err != nil {
		return s.err
	}
	if s.events == 0 {
		s.origin, s.last = e.Time, e.Time
	}
	if e.Time < s.watermark() {
		s.err = fmt.Errorf("%w: event %d at %s is %s before one at %s, more than the window of %s", ErrTimeOrder, e.Index,
			clock(s.origin).at(e.Time), dur(s.last-e.Time), clock(s.origin).at(s.last), dur(s.window))
		return s.err
	}
	s.events++
	s.origin, s.last, s.late = min(s.origin, e.Time), max(s.last, e.Time), max(s.late, s.last-e.Time)
	if e.ValidUntil == math.MaxInt64 {
		s.inexact("a valid_until of MaxInt64 reads as no deadline")
	}
	p := s.procs[e.Process]
	if p == nil {
		p = &proc{}
		s.procs[e.Process] = p
	}
	slot := &p.calls
	if e.F == FExtend {
		slot = &p.extends
	}
	switch o := *slot; {
	case e.Type == Invoke:
		if o != nil {
			s.finish(o) // it stays unknown
		}
		o = &sop{op: op{seq: s.seq, process: e.Process, f: e.F, key: e.Key, typ: Info,
			call: e.Time, ret: math.MaxInt64, inv: e.Index, done: -1}}
		s.seq++
		o.merge(&e)
		o.invKey = o.key
		*slot = o
		p.queue = append(p.queue, o)
		if o.f == FRead || o.f == FWrite {
			s.toCounter(o.call, o, false)
		}
	case o != nil && o.f == e.F:
		*slot = nil
		o.typ, o.ret, o.done = e.Type, e.Time, e.Index
		o.merge(&e)
		if o.ret < o.call { // it would open a window, or complete, behind the horizon
			s.inexact("operation %d completed before it was invoked", o.inv)
		}
		s.finish(o)
	case lone(e.F): // a note of its own
		o = &sop{op: op{seq: s.seq, process: e.Process, f: e.F, key: e.Key, typ: e.Type,
			call: e.Time, ret: e.Time, inv: e.Index, done: e.Index}, final: true}
		s.seq++
		o.merge(&e)
		p.queue = append(p.queue, o)
	default:
		s.ignored++
	}
	s.drain(p)
	if s.pending++; s.pending >= advanceEvery {
		s.advance()
	}
	return nil
}

// Anomalies returns the anomalies proven so far, ordered as in [Result].
// Each stays in the result of Close; stuck locks and starvations that last
// until the end of the history appear only there.
func (s *Stream) Anomalies() []Anomaly {
	out := slices.Clone(s.found)
	slices.SortStableFunc(out, byFirstOp)
	return out
}

// Prevented returns the prevented anomalies (fenced stale writes) proven
// so far, ordered as in [Result]; each stays in the result of Close.
func (s *Stream) Prevented() []Anomaly {
	saved := slices.Clone(s.saved)
	slices.SortStableFunc(saved, func(a, b staleFound) int { return a.seq - b.seq })
	out := make([]Anomaly, len(saved))
	for i, f := range saved {
		out[i] = f.a
	}
	return out
}

// Decide applies now what the events so far allow, as Add does every few
// hundred events, so that [Stream.Anomalies] lists all that is proven. A
// slow history (a few events a second) calls it on a timer.
func (s *Stream) Decide() {
	if !s.closed && s.err == nil && s.pending > 0 {
		s.advance()
	}
}

// Close ends the history and returns its result, which is [Check]'s for
// the events added (no search runs, so nothing times out). It returns the
// error that stopped Add, or an error wrapping [ErrNeedHistory] if the
// result may differ from Check's; the result is then the stream's best.
// Later calls return the same.
func (s *Stream) Close() (Result, error) {
	if s.closed {
		return s.res, s.resErr
	}
	s.closed = true
	for _, p := range s.procs {
		for _, o := range []*sop{p.calls, p.extends} {
			if o != nil {
				s.finish(o)
			}
		}
		p.calls, p.extends = nil, nil
		s.drain(p)
	}
	s.lb.finish()
	s.ended = true
	for _, k := range s.keys {
		if s.opt.StuckAfter >= 0 {
			for _, l := range k.open {
				s.leaseEnded(k, l)
			}
		}
		k.open = nil
	}
	s.advance()
	after := int64(s.opt.StuckAfter)
	for _, k := range s.sortedKeys() {
		if s.opt.StuckAfter >= 0 {
			if sc := k.stuck.flush(false, s.origin, after); sc != nil {
				s.stuckFound(k, *sc)
			}
			if !k.stuck.ttlFits(s.ttl) {
				s.inexact("MaxTTL, not set, turned out longer than the stuck-lock check of %q assumed", k.name)
			}
		}
		for _, st := range k.starve {
			s.decideRun(k, st)
		}
	}
	for _, c := range s.ctrs {
		if a := c.end(); a != nil {
			s.found = append(s.found, *a)
			s.inexact("a lost update on %q: only the whole history explains it", c.key)
		}
	}
	res := Result{Origin: s.origin, Ignored: s.ignored, Anomalies: s.Anomalies()}
	if len(res.Anomalies) == 0 {
		res.Anomalies = nil
	}
	slices.SortStableFunc(s.saved, func(a, b staleFound) int { return a.seq - b.seq })
	for _, f := range s.saved {
		res.Prevented = append(res.Prevented, f.a)
	}
	res.Verdict = verdict(res)
	res.Elapsed = time.Since(s.start)
	s.res, s.resErr = res, s.err
	if s.resErr == nil && len(s.why) > 0 {
		why := s.why
		if s.more {
			why = append(slices.Clone(why), "others")
		}
		s.resErr = fmt.Errorf("%w: %s", ErrNeedHistory, joinStrings(why))
	}
	return s.res, s.resErr
}

// Events returns the number of events added.
func (s *Stream) Events() int { return s.events }

// Lateness returns how far out of time order the events added were: the
// most one came before an event added earlier, 0 if they were in order.
func (s *Stream) Lateness() time.Duration { return time.Duration(s.late) }

// maxWhy is how many reasons a Stream gives for ErrNeedHistory: a history
// may have one per event.
const maxWhy = 8

func (s *Stream) inexact(format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	switch {
	case slices.Contains(s.why, why):
	case len(s.why) < maxWhy:
		s.why = append(s.why, why)
	default:
		s.more = true
	}
}

func (s *Stream) clock() clock { return clock(s.origin) }

func (s *Stream) key(name string) *lockKey {
	k := s.keys[name]
	if k == nil {
		k = &lockKey{name: name, starve: make(map[int]*starver), settled: make(map[int]bool), starved: make(map[int]bool)}
		k.stuck.ttlMax = math.MaxInt64
		s.keys[name] = k
	}
	return k
}

func (s *Stream) counter(name string) *counterKey {
	c := s.ctrs[name]
	if c == nil {
		c = &counterKey{key: name}
		s.ctrs[name] = c
	}
	return c
}

func (s *Stream) sortedKeys() []*lockKey {
	ks := make([]*lockKey, 0, len(s.keys))
	for _, k := range s.keys {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b *lockKey) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return ks
}

// finish marks o final: completed, or left unknown.
func (s *Stream) finish(o *sop) {
	o.final = true
	if o.f != FRead && o.f != FWrite {
		return
	}
	if o.key != o.invKey {
		s.inexact("operation %d changed its key from %q to %q", o.inv, o.invKey, o.key)
	}
	s.toCounter(max(o.call, min(o.ret, s.last)), o, true)
}

// drain applies p's final operations, in invoke order, up to its first
// open one.
func (s *Stream) drain(p *proc) {
	for p.head < len(p.queue) && p.queue[p.head].final {
		o := p.queue[p.head]
		p.queue[p.head] = nil
		p.head++
		s.apply(p, o)
	}
	switch {
	case p.head == len(p.queue):
		p.queue, p.head = p.queue[:0], 0
	case p.head >= 64 && p.head*2 >= len(p.queue):
		n := copy(p.queue, p.queue[p.head:])
		clear(p.queue[n:])
		p.queue, p.head = p.queue[:n], 0
	}
}

// apply gives o, the next operation of p, to the lease rules and to the
// checks.
func (s *Stream) apply(p *proc, o *sop) {
	created, closed := s.lb.add(&o.op)
	stuck := s.opt.StuckAfter >= 0
	if closed != nil {
		k := s.keys[closed.key]
		k.open = without(k.open, closed)
		if stuck {
			s.leaseEnded(k, closed)
		}
	}
	if created != nil {
		s.created(p, created)
	}
	switch {
	case o.f == FAcquire:
		k := s.key(o.key)
		switch {
		case !stuck:
		case o.typ == OK || o.typ == Fail:
			k.tries = insertBy(k.tries, &o.op, byRet)
		default:
			k.holds = insertBy(k.holds, hold{o.call, o.call, nil, &o.op}, byHoldStart)
		}
		if s.opt.StarveAfter >= 0 {
			s.tried(k, o)
		}
	case o.f == FExtend && o.typ == Info && stuck:
		k := s.key(o.key)
		k.holds = insertBy(k.holds, hold{o.call, o.call, nil, &o.op}, byHoldStart)
	case writeToJudge(&o.op):
		s.writes = append(s.writes, o)
	}
}

// created registers l, a lease p was just granted.
func (s *Stream) created(p *proc, l *lease) {
	k := s.key(l.key)
	k.open = append(k.open, l)
	k.sweep = append(k.sweep, l)
	k.recent = append(k.recent, l)
	i, _ := slices.BinarySearchFunc(k.byStart, l, func(x, l *lease) int {
		if x.start != l.start {
			return cmpInt(x.start, l.start)
		}
		return cmpInt(int64(x.id), int64(l.id))
	})
	k.byStart = slices.Insert(k.byStart, i, l)
	p.leases = append(p.leases, l)
	if s.opt.MaxTTL <= 0 && l.acquire.validUntil != 0 {
		s.ttl = max(s.ttl, l.acquire.validUntil-l.acquire.call)
	}
	for _, st := range k.starve {
		st.grant(l)
	}
	for _, st := range k.ended {
		st.grant(l)
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
