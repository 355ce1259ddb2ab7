package checker

import (
	"bufio"
	"bytes"
	"io"
	"time"

	"github.com/lockpick/lockpick/checker/internal/model"
)

// LeaseModelVerdicts runs the porcupine lease model on every lock key of h,
// including those where the interval check found a double grant, so tests
// can check that the two agree.
func LeaseModelVerdicts(h History, timeout time.Duration) map[string]Verdict {
	r := newRun(h, nil)
	var ps []*model.Part
	for _, p := range r.parts() {
		if p.Lease {
			ps = append(ps, p)
		}
	}
	model.Search(ps, timeout)
	out := make(map[string]Verdict)
	for _, p := range ps {
		out[p.Key] = map[string]Verdict{"Ok": Ok, "Illegal": Illegal, "Unknown": Unknown}[string(p.Res)]
	}
	return out
}

// ReadJSONLStd is [ReadJSONL] as it was before the fast path: it reads line
// by line and decodes every line with encoding/json. Tests compare the two.
func ReadJSONLStd(r io.Reader) (History, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var h History
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			e, perr := parseEvent(b)
			if perr != nil {
				return nil, &ParseError{Line: line, Err: perr}
			}
			h = append(h, e)
		}
		if err == io.EOF {
			return h, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// DecodeFast decodes one line with the fast path alone, and reports whether
// the line had the shape it decodes.
func DecodeFast(line []byte) (Event, bool) {
	var e Event
	var d decoder
	ok := d.fast(line, &e)
	return e, ok
}

// CounterVerdicts returns, for every resource key of h (in time order),
// whether the counter rule a Stream applies finds the key illegal, and
// whether porcupine's counter model does, with timeout.
// The rule runs twice, deciding at every event with no window for
// disorder (so that it forgets what it can as early as it can; h must be in
// time order) and only at the end; a key on which the two differ has the
// verdict "differs".
func CounterVerdicts(h History, timeout time.Duration) (rule, search map[string]Verdict) {
	rule, search = make(map[string]Verdict), make(map[string]Verdict)
	for _, decide := range []bool{true, false} {
		s := NewStream(nil)
		if decide {
			s = NewStream(&Options{Reorder: -1})
		}
		for _, e := range h {
			if err := s.Add(e); err != nil {
				panic(err)
			}
			if decide {
				s.Decide()
			}
		}
		s.Close()
		for key, c := range s.ctrs {
			v := Ok
			if c.bad {
				v = Illegal
			}
			if was, ok := rule[key]; ok && was != v {
				v = "differs"
			}
			rule[key], search[key] = v, Ok
		}
	}
	var ps []*model.Part
	for _, p := range newRun(h, nil).parts() {
		if !p.Lease {
			ps = append(ps, p)
		}
	}
	model.Search(ps, timeout)
	for _, p := range ps {
		search[p.Key] = map[string]Verdict{"Ok": Ok, "Illegal": Illegal, "Unknown": Unknown}[string(p.Res)]
	}
	return rule, search
}

// SetAdvanceEvery makes Streams decide every n events, until restore.
func SetAdvanceEvery(n int) (restore func()) {
	old := advanceEvery
	advanceEvery = n
	return func() { advanceEvery = old }
}

// Retained counts what s holds: operations not yet applied or in flight,
// leases in its lists with their windows, renewals and overlaps kept,
// decisions waiting, the counter rule's value ranges, and the entries of its
// maps. Anomalies found are not counted: they are the result.
func Retained(s *Stream) int {
	n := len(s.writes) + len(s.stales) + len(s.pairs) + s.ctrq.len() + len(s.procs) + len(s.keys)
	leases := make(map[*lease]bool)
	for _, p := range s.procs {
		n += len(p.queue) - p.head + len(p.leases)
		for _, l := range p.leases {
			leases[l] = true
		}
	}
	for _, k := range s.keys {
		n += len(k.open) + len(k.sweep) + len(k.active) + len(k.byStart) + len(k.recent) + len(k.holds) + len(k.tries) + len(k.later)
		n += len(k.settled) + len(k.starved)
		for _, st := range k.starve {
			n += 1 + len(st.later) + len(st.others)
		}
		for _, st := range k.ended {
			n += 1 + len(st.others)
		}
		for _, ls := range [][]*lease{k.open, k.sweep, k.byStart, k.recent} {
			for _, l := range ls {
				leases[l] = true
			}
		}
	}
	for l := range leases {
		n += len(l.windows) + len(l.extends.head) + len(l.pairs)
		for _, o := range l.extends.tail {
			if o != nil {
				n++
			}
		}
	}
	for _, ls := range s.lb.holding {
		n += 1 + len(ls)
	}
	n += len(s.lb.held)
	for _, c := range s.ctrs {
		n += 1 + len(c.oks) + len(c.all) + len(c.flying)
	}
	return n
}
