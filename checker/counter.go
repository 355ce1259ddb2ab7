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
