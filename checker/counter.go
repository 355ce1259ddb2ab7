package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockpick/lockpick/checker/internal/model"
)

// okWrites returns the ok writes with a value, by key.
func (r *run) okWrites() map[string][]*op {
	m := make(map[string][]*op)
	for i := range r.ops {
		if o := &r.ops[i]; o.f == FWrite && o.typ == OK && o.hasValue {
			m[o.key] = append(m[o.key], o)
		}
	}
	return m
}

// duplicateWrites returns a lost-update anomaly for every value that two
// or more of writes (the ok writes to key) wrote. The counter model only
// ever increments, so such a history is illegal, and each extra write lost
// an increment.
func (r *run) duplicateWrites(key string, writes []*op) []Anomaly {
	byValue := make(map[int64][]*op)
	for _, o := range writes {
		byValue[o.value] = append(byValue[o.value], o)
	}
	var out []Anomaly
	for v, ws := range byValue {
		if len(ws) < 2 {
			continue
		}
		a := Anomaly{Kind: LostUpdate, Key: key}
		var who []string
		for _, w := range ws {
			a.Processes = append(a.Processes, w.process)
			a.Ops = append(a.Ops, w.indexes()...)
			a.Nodes = nodes(append(a.Nodes, w.node)...)
			who = append(who, fmt.Sprintf("process %d at %s", w.process, r.clock.at(w.call)))
		}
		a.Message = fmt.Sprintf("%d writes of %d to %q succeeded (%s); the counter only increments, so %s lost",
			len(ws), v, key, joinStrings(who), increments(len(ws)-1))
		out = append(out, a)
	}
	slices.SortFunc(out, byFirstOp)
	return out
}

func increments(n int) string {
	if n == 1 {
		return "an increment was"
	}
	return fmt.Sprintf("%d increments were", n)
}

// firstUnordered reruns the search of p verbosely and reports the earliest
// returning operation that no valid order of the partition reaches.
func (r *run) firstUnordered(p *model.Part, timeout time.Duration) Anomaly {
	a := Anomaly{Kind: LostUpdate, Key: p.Key,
		Message: fmt.Sprintf("the reads and writes of %q cannot be ordered as increments of a counter", p.Key)}
	m := model.New()
	m.Partition = nil
	res, info := porcupine.CheckOperationsVerbose(m, p.Ops, timeout)
	if res != porcupine.Illegal {
		return a
	}
	var longest []porcupine.Operation
	for _, seqs := range info.PartialLinearizationsOperations() {
		for _, s := range seqs {
			if len(s) > len(longest) {
				longest = s
			}
		}
	}
	done := make(map[int]bool)
	for _, o := range longest {
		done[o.Metadata.(model.Meta).Indexes[0]] = true
	}
	var culprit *porcupine.Operation
	for i := range p.Ops {
		o := &p.Ops[i]
		if !done[o.Metadata.(model.Meta).Indexes[0]] && (culprit == nil || o.Return < culprit.Return) {
			culprit = o
		}
	}
	if culprit == nil {
		return a
	}
	ix := culprit.Metadata.(model.Meta).Indexes
	o := r.opAt(ix[0])
	a.Processes = []int{o.process}
	a.Ops = ix
	a.Nodes = nodes(o.node)
	state := "unknown"
	if n := len(longest); n > 0 {
		last := longest[n-1]
		if in := last.Input.(model.CounterInput); in.Write {
			state = fmt.Sprint(in.Value)
		} else {
			state = fmt.Sprint(last.Output)
		}
	}
	verb := fmt.Sprintf("writing %d", o.value)
	if o.f == FRead {
		verb = fmt.Sprintf("reading %d", o.value)
	}
	a.Message = fmt.Sprintf("no order of the reads and writes of %q explains process %d %s at %s: the longest consistent order has %d operations and leaves the counter at %s",
		p.Key, o.process, verb, r.clock.at(o.call), len(longest), state)
	return a
}

// opAt returns the operation whose invoke has history index ix.
func (r *run) opAt(ix int) *op {
	i, ok := slices.BinarySearchFunc(r.ops, ix, func(o op, ix int) int { return o.inv - ix })
	if ok {
		return &r.ops[i]
	}
	for i := range r.ops { // indexes out of order
		if r.ops[i].inv == ix {
			return &r.ops[i]
		}
	}
	return &op{inv: ix, done: -1}
}

// A counterKey applies the counter rule (see counterrule.go in package
// model) to one resource key as its operations come, in time order. What
// it keeps does not grow with the history: oks forgets the values no write
// to come can repeat without breaking the rule another way (see prune),
// and all, the values written or maybe written, is one range but for the
// values still to be written (and those never written, a lost update).
type counterKey struct {
	key    string
	done   model.MaxBefore // places of the ok reads and writes, by completion
	fences model.MaxBefore // fences of the ok reads and writes (as places), by completion
	lo, hi int64           // lowest and highest value of an ok read or write
	seen   bool
	oks    model.ValueSet // values of ok writes, but those below the floor of prune
	all    model.ValueSet // values of ok writes and of unknown writes that may supply them
	flying []*sop         // writes invoked and not yet final, in invoke order
	bad    bool           // a violation was found: the rest of the rule does not matter
}

// invoked notes, for o, what had completed before its invoke.
func (c *counterKey) invoked(o *sop) {
	o.before, o.hasBefore = c.done.Get(o.call)
	o.fenceBefore, o.hasFence = c.fences.Get(o.call)
	if o.f == FWrite && !c.bad {
		c.flying = append(c.flying, o)
	}
}

// completed applies the rule to o, a read or write that is final, and
// returns a violation, if it shows one.
func (c *counterKey) completed(o *sop, clk clock) *Anomaly {
	if o.typ == OK {
		c.fences.Add(o.ret, model.Place{V: o.fence})
	}
	if i := slices.Index(c.flying, o); i >= 0 {
		c.flying = slices.Delete(c.flying, i, i+1)
	}
	if c.bad || !o.hasValue || o.typ == Fail || (o.f == FRead && o.typ != OK) {
		return nil
	}
	p := model.Place{V: o.value, Read: o.f == FRead}
	if o.typ != OK { // a write with an unknown outcome
		if !o.hasBefore || !p.Less(o.before) {
			c.all.Add(o.value)
		}
		return nil
	}
	c.done.Add(o.ret, p)
	if !c.seen {
		c.lo, c.hi, c.seen = o.value, o.value, true
	}
	c.lo, c.hi = min(c.lo, o.value), max(c.hi, o.value)
	switch {
	case o.hasBefore && p.Less(o.before):
		return c.violation(o, clk, "after an operation that must follow it had completed")
	case !p.Read && !c.oks.Add(o.value):
		return c.violation(o, clk, "a value already written: the counter only increments")
	case !p.Read:
		c.all.Add(o.value)
	}
	return nil
}

// prune lets oks forget the values below the floor: the place that every
// write still to complete had seen completed before its invoke, which is
// that of its earliest in flight, or, for those still to come (every
// invoke to come is at or after t), the latest place completed before t.
// A write of a value below it comes before an operation that completed
// before its invoke: the rule's first violation, whatever oks holds. A
// write in flight for ever (its process never heard of again) holds the
// floor where it was.
func (c *counterKey) prune(t int64) {
	if c.bad || len(c.oks) < 2 {
		return
	}
	floor, ok := c.done.Get(t)
	if len(c.flying) > 0 { // their places before were taken in time order
		floor, ok = c.flying[0].before, c.flying[0].hasBefore
	}
	if ok {
		c.oks.DropBelow(floor.V)
	}
}

// end applies the rest of the rule once the history is over.
func (c *counterKey) end() *Anomaly {
	if !c.seen || c.bad {
		return nil
	}
	v, gap := model.FirstGap(c.all, nil, c.lo+1, c.hi)
	if !gap {
		return nil
	}
	c.bad = true
	return &Anomaly{Kind: LostUpdate, Key: c.key, Message: fmt.Sprintf(
		"no write of %d to %q took effect, yet the counter went from %d to %d", v, c.key, c.lo, c.hi)}
}

func (c *counterKey) violation(o *sop, clk clock, why string) *Anomaly {
	if c.bad {
		return nil
	}
	c.bad = true
	c.oks, c.all, c.flying = nil, nil, nil
	verb := "wrote"
	if o.f == FRead {
		verb = "read"
	}
	return &Anomaly{Kind: LostUpdate, Key: c.key, Processes: []int{o.process}, Ops: o.indexes(), Nodes: nodes(o.node),
		Message: fmt.Sprintf("process %d %s %d at %s, %s", o.process, verb, o.value, clk.at(o.call), why)}
}
