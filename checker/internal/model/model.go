package model

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// A LeaseInput is a lease operation: the grant (or extension) of a lease
// window, called at the acquire's invoke and returning at its ok, or the end
// of the window, a point at its end time.
type LeaseInput struct {
	End   bool
	Owner string // the holder's process, "process N", whatever its token
	Token string // the lease's token, for the visualization only
}

// name is how the visualization shows the lease: by its token, if any.
func (in LeaseInput) name() string {
	if in.Token != "" {
		return in.Token
	}
	return in.Owner
}

// A leaseState is the holder of a lock and how many windows it holds
// (more than one only while a new lease of the holder starts where its old
// one is cut).
type leaseState struct {
	owner string
	depth int
}

// A CounterInput is a read or a write of the protected counter. Writes must
// increment: write v is legal only when the counter holds v-1. A write whose
// outcome is unknown (maybe) may or may not have taken effect.
type CounterInput struct {
	Write bool
	Maybe bool
	Value int64 // the value written; reads carry theirs as output
}

// unknownCounter is the counter's state before any operation: any value.
const unknownCounter = math.MinInt64

func step(state, input, output any) (bool, any) {
	switch in := input.(type) {
	case LeaseInput:
		s, _ := state.(leaseState)
		switch {
		case !in.End && (s.depth == 0 || s.owner == in.Owner):
			return true, leaseState{in.Owner, s.depth + 1}
		case in.End && s.depth > 0 && s.owner == in.Owner:
			if s.depth == 1 {
				return true, leaseState{}
			}
			return true, leaseState{s.owner, s.depth - 1}
		}
		return false, state
	case CounterInput:
		v, ok := state.(int64)
		if !ok {
			v = unknownCounter
		}
		if !in.Write {
			got := output.(int64)
			return v == unknownCounter || v == got, got
		}
		if v == unknownCounter || v == in.Value-1 {
			return true, in.Value
		}
		return in.Maybe, v // an unknown write that did not happen
	}
	panic(fmt.Sprintf("model: unknown input %T", input))
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
	case LeaseInput:
		if in.End {
			return "end " + in.name()
		}
		return "grant " + in.name()
	case CounterInput:
		switch {
		case !in.Write:
			return fmt.Sprintf("read -> %d", output)
		case in.Maybe:
			return fmt.Sprintf("write %d (unknown)", in.Value)
		}
		return fmt.Sprintf("write %d", in.Value)
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

// New returns the porcupine model. Operations carry their partition's name
// in Metadata (a [Meta]), so the same model can check one partition or a
// whole history partitioned for visualization.
func New() porcupine.Model {
	return porcupine.Model{
		Partition: partition,
		Init:      func() any { return nil },
		Step:      step,
		Equal:     func(a, b any) bool { return a == b },
		Hash:      hash,

		DescribeOperation: describeOperation,
		DescribeState:     describeState,
		DescribeOperationMetadata: func(m any) string {
			if m, ok := m.(Meta); ok {
				return m.String()
			}
			return ""
		},
	}
}

// A Meta tells where a porcupine operation came from.
type Meta struct {
	Partition string // e.g. `lock "lock"` or `counter "counter"`
	Process   int
	Indexes   []int // history indexes
}

// String describes m for porcupine's visualization.
func (m Meta) String() string {
	return fmt.Sprintf("%s, process %d, events %v", m.Partition, m.Process, m.Indexes)
}

func partition(ops []porcupine.Operation) [][]porcupine.Operation {
	var names []string
	parts := make(map[string][]porcupine.Operation)
	for _, o := range ops {
		name := o.Metadata.(Meta).Partition
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
