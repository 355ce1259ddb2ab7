package checkertest

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/lockpick/lockpick/checker"
)

// Options describe a simulated trial: processes looping acquire, read,
// write value+1, release over a few lock keys, each lock ("lock0", "lock1",
// ...) protecting its own counter ("counter0", ...). Zero fields take their
// defaults.
type Options struct {
	// Processes is the number of clients, numbered from 0.
	// default: 16
	Processes int
	// Keys is the number of lock keys, each with its own counter.
	// default: 4
	Keys int
	// Events is how many events to generate. The history stops at the first
	// step that reaches it, so it may hold up to two more.
	// default: 100_000
	Events int
	// TTL is the leases' time to live. Operations take 40µs to 440µs.
	// default: 1s
	TTL time.Duration
	// UnknownRate is the chance, from 0 to 1, that an acquire's or a write's
	// request or reply is lost: the completion is info, and the operation
	// took effect or not with even odds.
	// default: 0
	UnknownRate float64
	// BrokenRate is the chance, from 0 to 1, that an acquire is granted
	// although another process holds the key: a double grant.
	// default: 0
	BrokenRate float64
	// PauseRate is the chance, from 0 to 1, that a holder pauses for two
	// TTLs before reading, so its write may come after its lease expired.
	// default: 0
	PauseRate float64
	// Fenced makes the counter reject a write whose fence is lower than one
	// it already accepted (a fail with error "fenced").
	// default: false
	Fenced bool
	// CleanUp makes a process whose acquire ended unknown release the key
	// next (with its token, if it was granted), as a client that cleans up
	// after an error does, rather than leave it held until it expires.
	// default: false
	CleanUp bool
	// Crash is how many processes, spread over the history, crash right
	// after a grant: they never release it, nor do anything else. At most
	// Processes-1.
	// default: 0
	Crash int
	// Late is how many events, spread evenly over the history, are written
	// LateBy before the event written just before them (one of another
	// process), as when several recorders share a file: the history is
	// then out of time order by LateBy.
	// default: 0
	Late int
	// LateBy is how far before its predecessor a late event is written.
	// default: 5ns
	LateBy time.Duration
	// Grants numbers each process's grants, as lockpick's harness does: an
	// ok acquire and the reads, writes and release under its lease carry
	// the number in Grant.
	// default: false
	Grants bool
	// Token, if set, is the token of every grant, as a lock that cannot
	// tell its holders apart (SET key 1 NX) hands out; with BrokenRate, the
	// double grants are also shared tokens.
	// default: "" (a token of its own per grant)
	Token string
	// Seed seeds the simulation: the same options give the same history.
	// default: 0
	Seed uint64
}

func (o Options) withDefaults() Options {
	if o.Processes == 0 {
		o.Processes = 16
	}
	if o.Keys == 0 {
		o.Keys = 4
	}
	if o.Events == 0 {
		o.Events = 100_000
	}
	if o.TTL == 0 {
		o.TTL = time.Second
	}
	if o.LateBy == 0 {
		o.LateBy = 5
	}
	return o
}

// A step is one operation a process will perform, linearized at time at.
type step struct {
	at      int64
	half    int64 // half the operation's latency, ns
	process int
}

type steps []step

func (s steps) Len() int           { return len(s) }
func (s steps) Less(i, j int) bool { return s[i].at < s[j].at }
func (s steps) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }
func (s *steps) Push(x any)        { *s = append(*s, x.(step)) }
func (s *steps) Pop() any {
	old := *s
	x := old[len(old)-1]
	*s = old[:len(old)-1]
	return x
}

// Generate simulates the trial opt describes (nil means the defaults) and
// returns its history, sorted by time (ties in simulation order) but for
// the Late events, with Index equal to the position. Every operation takes effect atomically halfway
// between its invoke and its completion, so the simulated system is
// linearizable except for the faults opt injects. A nemesis note (a lone
// info "noop") is added every 200ms.
func Generate(opt *Options) checker.History {
	var h checker.History
	generate(opt, func(e checker.Event) { h = append(h, e) })
	return h
}

// Each calls emit with each event of the history opt describes, in the
// order [Generate] returns them, without holding the history: memory stays
// flat for any number of events.
func Each(opt *Options, emit func(checker.Event)) { generate(opt, emit) }

// WriteJSONL writes the history opt describes, as [Generate] returns it, to
// w in JSON Lines form as [checker.History.WriteJSONL] does, without holding
// it: memory stays flat for any number of events. It returns the first
// write error.
func WriteJSONL(w io.Writer, opt *Options) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var err error
	generate(opt, func(e checker.Event) {
		if err == nil {
			err = enc.Encode(&e)
		}
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// maxHalf bounds half an operation's latency, ns: an event generated later
// is never more than this before the step being simulated.
const maxHalf = 220_000

// generate simulates the trial opt describes and calls emit with each event
// in time order (ties in the order they were simulated), with Index equal
// to its position. Events wait in a heap only until no later step can come
// before them.
func generate(opt *Options, emit func(checker.Event)) {
	var w Options
	if opt != nil {
		w = *opt
	}
	w = w.withDefaults()
	rng := rand.New(rand.NewPCG(w.Seed, 1))
	type proc struct {
		phase int // 0 acquire, 1 read, 2 write, 3 release
		key   int
		token string
		fence int64
		read  int64
		grant int // the grant number of its lease, 0 if none
		n     int // its grants so far
	}
	type lock struct {
		holder  int
		expires int64
	}
	procs := make([]proc, w.Processes)
	locks := make([]lock, w.Keys)
	counters := make([]int64, w.Keys)
	maxFence := make([]int64, w.Keys)
	var fence int64
	const base = int64(1_000_000_000)
	ttl := int64(w.TTL)
	pending := &events{}
	added, emitted := 0, 0
	emit = late(w, emit)
	add := func(e checker.Event) {
		heap.Push(pending, queued{e, added})
		added++
	}
	// flush emits the events before t: every event still to come is at t
	// or later.
	flush := func(t int64) {
		for pending.Len() > 0 && ((*pending)[0].Time < t || t == math.MaxInt64) {
			e := heap.Pop(pending).(queued).Event
			e.Index = emitted
			emitted++
			emit(e)
		}
	}
	lockNames, ctrNames := make([]string, w.Keys), make([]string, w.Keys)
	for k := range w.Keys {
		lockNames[k], ctrNames[k] = fmt.Sprint("lock", k), fmt.Sprint("counter", k)
	}
	q := &steps{}
	for p := range procs {
		procs[p].key = rng.IntN(w.Keys)
		heap.Push(q, step{base + rng.Int64N(1_000_000), 100_000, p})
	}
	nextNemesis := base + 200_000_000
	crashes := min(w.Crash, w.Processes-1)
	crashEvery := w.Events / (crashes + 1)
	for added < w.Events {
		s := heap.Pop(q).(step)
		flush(min(s.at-maxHalf, nextNemesis))
		if s.at > nextNemesis {
			add(checker.Event{Process: -1, Type: checker.Info, F: checker.FNemesis, Value: checker.TextValue("noop"), Time: nextNemesis})
			nextNemesis += 200_000_000
		}
		p := &procs[s.process]
		inv, done := s.at-s.half, s.at+s.half
		key, ctr := lockNames[p.key], ctrNames[p.key]
		next := done + 10_000 + rng.Int64N(100_000)
		switch p.phase {
		case 0:
			add(checker.Event{Process: s.process, Type: checker.Invoke, F: checker.FAcquire, Key: key, Time: inv})
			l := &locks[p.key]
			free := l.expires <= s.at || rng.Float64() < w.BrokenRate
			lost := rng.Float64() < w.UnknownRate
			if free && !(lost && rng.IntN(2) == 0) {
				fence++
				p.token, p.fence, p.grant = fmt.Sprintf("t%d", fence), fence, 0
				if w.Token != "" {
					p.token = w.Token
				}
				l.holder, l.expires = s.process, s.at+ttl
				if lost {
					add(checker.Event{Process: s.process, Type: checker.Info, F: checker.FAcquire, Key: key, Error: "timeout", Time: done})
					if w.CleanUp {
						p.phase = 3
						break
					}
					p.key = rng.IntN(w.Keys)
					break
				}
				if w.Grants {
					p.n++
					p.grant = p.n
				}
				add(checker.Event{Process: s.process, Type: checker.OK, F: checker.FAcquire, Key: key, Token: p.token,
					Grant: p.grant, Fence: fence, ValidUntil: inv + ttl - ttl/100, Node: "n1", Time: done})
				p.phase = 1
				if rng.Float64() < w.PauseRate {
					next += 2 * ttl
				}
				if crashes > 0 && added >= crashEvery*(min(w.Crash, w.Processes-1)-crashes+1) {
					crashes--
					continue // it crashed: no next step
				}
			} else if lost {
				add(checker.Event{Process: s.process, Type: checker.Info, F: checker.FAcquire, Key: key, Error: "timeout", Time: done})
				if w.CleanUp {
					p.phase, p.token, p.grant = 3, "", 0
					break
				}
				p.key = rng.IntN(w.Keys)
			} else {
				add(checker.Event{Process: s.process, Type: checker.Fail, F: checker.FAcquire, Key: key, Error: "not acquired", Node: "n1", Time: done})
				next += rng.Int64N(2_000_000)
			}
		case 1:
			p.read = counters[p.key]
			add(checker.Event{Process: s.process, Type: checker.Invoke, F: checker.FRead, Key: ctr, Grant: p.grant, Time: inv})
			add(checker.Event{Process: s.process, Type: checker.OK, F: checker.FRead, Key: ctr, Grant: p.grant, Value: checker.IntValue(p.read), Time: done})
			p.phase = 2
		case 2:
			v := checker.IntValue(p.read + 1)
			add(checker.Event{Process: s.process, Type: checker.Invoke, F: checker.FWrite, Key: ctr, Value: v, Fence: p.fence, Grant: p.grant, Time: inv})
			lost := rng.Float64() < w.UnknownRate
			switch {
			case w.Fenced && p.fence < maxFence[p.key]:
				add(checker.Event{Process: s.process, Type: checker.Fail, F: checker.FWrite, Key: ctr, Error: "fenced", Time: done})
			case lost && rng.IntN(2) == 0: // the request was lost
				add(checker.Event{Process: s.process, Type: checker.Info, F: checker.FWrite, Key: ctr, Error: "timeout", Time: done})
			default:
				counters[p.key] = p.read + 1
				maxFence[p.key] = max(maxFence[p.key], p.fence)
				typ := checker.OK
				if lost { // the reply was lost
					typ = checker.Info
				}
				add(checker.Event{Process: s.process, Type: typ, F: checker.FWrite, Key: ctr, Value: v, Time: done})
			}
			p.phase = 3
		case 3:
			add(checker.Event{Process: s.process, Type: checker.Invoke, F: checker.FRelease, Key: key, Token: p.token, Grant: p.grant, Time: inv})
			l := &locks[p.key]
			if l.holder == s.process && l.expires > s.at {
				l.expires = 0
				add(checker.Event{Process: s.process, Type: checker.OK, F: checker.FRelease, Key: key, Time: done})
			} else {
				add(checker.Event{Process: s.process, Type: checker.Fail, F: checker.FRelease, Key: key, Error: "not held", Time: done})
			}
			p.phase, p.key = 0, rng.IntN(w.Keys)
		}
		half := 20_000 + rng.Int64N(200_000)
		heap.Push(q, step{next + half, half, s.process})
	}
	flush(math.MaxInt64)
}

// late returns emit, moving w.Late events, spread evenly, to w.LateBy
// before the event emitted just before them (when that one is of another
// process; else the next event that qualifies).
func late(w Options, emit func(checker.Event)) func(checker.Event) {
	if w.Late <= 0 {
		return emit
	}
	every := max(w.Events/(w.Late+1), 2)
	var prev checker.Event
	n, moved := 0, 0
	return func(e checker.Event) {
		n++
		if moved < w.Late && n >= every*(moved+1) && n > 1 && prev.Process != e.Process {
			orig := e
			e.Time = prev.Time - int64(w.LateBy)
			moved++
			emit(e)
			prev = orig
			return
		}
		emit(e)
		prev = e
	}
}

// A queued event waits for its turn; seq keeps simulation order among
// events of the same time.
type queued struct {
	checker.Event
	seq int
}

type events []queued

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	return q[i].Time < q[j].Time || q[i].Time == q[j].Time && q[i].seq < q[j].seq
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *events) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// JSONL returns the history opt describes as [Generate] does, written in
// JSON Lines form by [WriteJSONL].
func JSONL(opt *Options) []byte {
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, opt); err != nil {
		panic(err) // a bytes.Buffer does not fail
	}
	return buf.Bytes()
}
