package checker_test

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockpick/lockpick/checker"
)

// A workload describes a simulated trial: processes looping acquire, read,
// write value+1, release over a few lock keys, each lock protecting its own
// counter, with optional faults.
type workload struct {
	Processes, Keys int
	Events          int           // stop after about this many events
	TTL             time.Duration // lease time to live
	Seed            uint64

	Broken  float64 // chance an acquire is granted although the key is held
	Pause   float64 // chance a holder pauses for 2 TTL before its critical section
	Unknown float64 // chance an acquire's or a write's request or reply is lost (info)
	Fenced  bool    // the counter rejects writes with a lower fence than seen
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

// generate simulates w and returns its history, sorted by time. Every
// operation takes effect atomically at its step's time, halfway between its
// invoke and its completion, so the simulated system is linearizable except
// for the faults w injects.
func generate(w workload) checker.History {
	rng := rand.New(rand.NewPCG(w.Seed, 1))
	type proc struct {
		phase int // 0 acquire, 1 read, 2 write, 3 release
		key   int
		token string
		fence int64
		read  int64
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
	var h checker.History
	add := func(e checker.Event) { h = append(h, e) }
	q := &steps{}
	for p := range procs {
		procs[p].key = rng.IntN(w.Keys)
		heap.Push(q, step{base + rng.Int64N(1_000_000), 100_000, p})
	}
	nextNemesis := base + 200_000_000
	for len(h) < w.Events {
		s := heap.Pop(q).(step)
		if s.at > nextNemesis {
			add(checker.Event{Process: -1, Type: checker.Info, F: "nemesis", Value: checker.TextValue("noop"), Time: nextNemesis})
			nextNemesis += 200_000_000
		}
		p := &procs[s.process]
		inv, done := s.at-s.half, s.at+s.half
		key := fmt.Sprint("lock", p.key)
		ctr := fmt.Sprint("counter", p.key)
		next := done + 10_000 + rng.Int64N(100_000)
		switch p.phase {
		case 0:
			add(checker.Event{Process: s.process, Type: checker.Invoke, F: "acquire", Key: key, Time: inv})
			l := &locks[p.key]
			free := l.expires <= s.at || rng.Float64() < w.Broken
			lost := rng.Float64() < w.Unknown
			if free && !(lost && rng.IntN(2) == 0) {
				fence++
				p.token, p.fence = fmt.Sprintf("t%d", fence), fence
				l.holder, l.expires = s.process, s.at+ttl
				if lost {
					add(checker.Event{Process: s.process, Type: checker.Info, F: "acquire", Key: key, Error: "timeout", Time: done})
					p.key = rng.IntN(w.Keys)
					break
				}
				add(checker.Event{Process: s.process, Type: checker.OK, F: "acquire", Key: key, Token: p.token,
					Fence: fence, ValidUntil: inv + ttl - ttl/100, Node: "n1", Time: done})
				p.phase = 1
				if rng.Float64() < w.Pause {
					next += 2 * ttl
				}
			} else if lost {
				add(checker.Event{Process: s.process, Type: checker.Info, F: "acquire", Key: key, Error: "timeout", Time: done})
				p.key = rng.IntN(w.Keys)
			} else {
				add(checker.Event{Process: s.process, Type: checker.Fail, F: "acquire", Key: key, Error: "not acquired", Node: "n1", Time: done})
				next += rng.Int64N(2_000_000)
			}
		case 1:
			p.read = counters[p.key]
			add(checker.Event{Process: s.process, Type: checker.Invoke, F: "read", Key: ctr, Time: inv})
			add(checker.Event{Process: s.process, Type: checker.OK, F: "read", Key: ctr, Value: checker.IntValue(p.read), Time: done})
			p.phase = 2
		case 2:
			v := checker.IntValue(p.read + 1)
			add(checker.Event{Process: s.process, Type: checker.Invoke, F: "write", Key: ctr, Value: v, Fence: p.fence, Time: inv})
			lost := rng.Float64() < w.Unknown
			switch {
			case w.Fenced && p.fence < maxFence[p.key]:
				add(checker.Event{Process: s.process, Type: checker.Fail, F: "write", Key: ctr, Error: "fenced", Time: done})
			case lost && rng.IntN(2) == 0: // the request was lost
				add(checker.Event{Process: s.process, Type: checker.Info, F: "write", Key: ctr, Error: "timeout", Time: done})
			default:
				counters[p.key] = p.read + 1
				maxFence[p.key] = max(maxFence[p.key], p.fence)
				typ := checker.OK
				if lost { // the reply was lost
					typ = checker.Info
				}
				add(checker.Event{Process: s.process, Type: typ, F: "write", Key: ctr, Value: v, Time: done})
			}
			p.phase = 3
		case 3:
			add(checker.Event{Process: s.process, Type: checker.Invoke, F: "release", Key: key, Token: p.token, Time: inv})
			l := &locks[p.key]
			if l.holder == s.process && l.expires > s.at {
				l.expires = 0
				add(checker.Event{Process: s.process, Type: checker.OK, F: "release", Key: key, Time: done})
			} else {
				add(checker.Event{Process: s.process, Type: checker.Fail, F: "release", Key: key, Error: "not held", Time: done})
			}
			p.phase, p.key = 0, rng.IntN(w.Keys)
		}
		half := 20_000 + rng.Int64N(200_000)
		heap.Push(q, step{next + half, half, s.process})
	}
	slices.SortStableFunc(h, func(a, b checker.Event) int {
		switch {
		case a.Time < b.Time:
			return -1
		case a.Time > b.Time:
			return 1
		}
		return 0
	})
	for i := range h {
		h[i].Index = i
	}
	return h
}
