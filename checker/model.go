package checker

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// The porcupine models. Both run on operations derived from the history and
// keep a small, comparable state, so porcupine's cache of visited states
// stays cheap. One model serves every partition: the input type says which
// kind of partition an operation belongs to, and nil is the initial state of
// both.

// A leaseInput is a lease operation: the grant (or extension) of a lease
// window, called at the acquire's invoke and returning at its ok, or the end
// of the window, a point at its end time.
type leaseInput struct {
	end   bool
	owner string // token, or "process N" without one
}

// A leaseState is the holder of a lock and how many windows it holds
// (more than one only for a token shared by several processes).
type leaseState struct {
	owner string
	depth int
}

// A counterInput is a read or a write of the protected counter. Writes must
// increment: write v is legal only when the counter holds v-1. A write whose
// outcome is unknown (maybe) may or may not have taken effect.
type counterInput struct {
	write bool
	maybe bool
	value int64 // the value written; reads carry theirs as output
}

// unknownCounter is the counter's state before any operation: any value.
const unknownCounter = math.MinInt64

func step(state, input, output any) (bool, any) {
	switch in := input.(type) {
	case leaseInput:
		s, _ := state.(leaseState)
		switch {
		case !in.end && (s.depth == 0 || s.owner == in.owner):
			return true, leaseState{in.owner, s.depth + 1}
		case in.end && s.depth > 0 && s.owner == in.owner:
			if s.depth == 1 {
				return true, leaseState{}
			}
			return true, leaseState{s.owner, s.depth - 1}
		}
		return false, state
	case counterInput:
		v, ok := state.(int64)
		if !ok {
			v = unknownCounter
		}
		if !in.write {
			got := output.(int64)
			return v == unknownCounter || v == got, got
		}
		if v == unknownCounter || v == in.value-1 {
			return true, in.value
		}
		return in.maybe, v // an unknown write that did not happen
	}
	panic(fmt.Sprintf("checker: unknown model input %T", input))
}

func hash(state any) uint64 {
	switch s := state.(type) {
	case int64:
		return uint64(s) * 0x9e3779b97f4a7c15
	case leaseState:
		var h uint64 = 14695981039346656037
		for i := 0; i < len(s.owner); i++ {
			h = (h ^ uint64(s.owner[i])) * 1099511628211
		}
		return h ^ uint64(s.depth)
	}
	return 0
}

func describeOperation(input, output any) string {
	switch in := input.(type) {
	case leaseInput:
		if in.end {
			return "end " + in.owner
		}
		return "grant " + in.owner
	case counterInput:
		switch {
		case !in.write:
			return fmt.Sprintf("read -> %d", output)
		case in.maybe:
			return fmt.Sprintf("write %d (unknown)", in.value)
		}
		return fmt.Sprintf("write %d", in.value)
	}
	return fmt.Sprint(input, " -> ", output)
}

func describeState(state any) string {
	switch s := state.(type) {
	case nil:
		return "initial"
	case int64:
		if s == unknownCounter {
			return "?"
		}
		return fmt.Sprint(s)
	case leaseState:
		if s.depth == 0 {
			return "free"
		}
		if s.depth == 1 {
			return "held by " + s.owner
		}
		return fmt.Sprintf("held %d times by %s", s.depth, s.owner)
	}
	return fmt.Sprint(state)
}

// model returns the porcupine model. Operations carry their partition's
// name in Metadata (an opMeta), so the same model can check one partition or
// a whole history partitioned for visualization.
func model() porcupine.Model {
	return porcupine.Model{
		Partition: partition,
		Init:      func() any { return nil },
		Step:      step,
		Equal:     func(a, b any) bool { return a == b },
		Hash:      hash,

		DescribeOperation: describeOperation,
		DescribeState:     describeState,
		DescribeOperationMetadata: func(m any) string {
			if m, ok := m.(opMeta); ok {
				return m.String()
			}
			return ""
		},
	}
}

// An opMeta tells where a porcupine operation came from.
type opMeta struct {
	partition string // e.g. `lock "lock"` or `counter "counter"`
	process   int
	indexes   []int // history indexes
}

func (m opMeta) String() string {
	return fmt.Sprintf("%s, process %d, events %v", m.partition, m.process, m.indexes)
}

func partition(ops []porcupine.Operation) [][]porcupine.Operation {
	var names []string
	parts := make(map[string][]porcupine.Operation)
	for _, o := range ops {
		name := o.Metadata.(opMeta).partition
		if _, ok := parts[name]; !ok {
			names = append(names, name)
		}
		parts[name] = append(parts[name], o)
	}
	out := make([][]porcupine.Operation, len(names))
	for i, n := range names {
		out[i] = parts[n]
	}
	return out
}
