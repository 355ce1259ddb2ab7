package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/lockpick/lockpick/checker/internal/model"
)

// parts returns the partitions of r, lock keys first, each sorted by name.
func (r *run) parts() []*model.Part {
	clients := make(map[int]int) // process -> zero-based client id
	for i := range r.ops {
		clients[r.ops[i].process] = 0
	}
	procs := make([]int, 0, len(clients))
	for p := range clients {
		procs = append(procs, p)
	}
	slices.Sort(procs)
	for i, p := range procs {
		clients[p] = i
	}

	type kind struct {
		lease bool
		key   string
	}
	byKind := make(map[kind]*model.Part)
	byName := make(map[string]*model.Part)
	get := func(lease bool, key string) *model.Part {
		if p := byKind[kind{lease, key}]; p != nil {
			return p
		}
		name := fmt.Sprintf("counter %q", key)
		if lease {
			name = fmt.Sprintf("lock %q", key)
		}
		p := byName[name]
		if p == nil {
			p = &model.Part{Name: name, Lease: lease, Key: key}
			byName[name] = p
		}
		byKind[kind{lease, key}] = p
		return p
	}
	for _, l := range r.leases {
		p := get(true, l.key)
		in := model.LeaseInput{Owner: owner(l), Token: l.token}
		for _, w := range l.windows {
			p.Ops = append(p.Ops, porcupine.Operation{
				ClientId: clients[l.process], Input: in, Call: w.by.call, Return: w.start,
				Metadata: model.Meta{Partition: p.Name, Process: l.process, Indexes: w.by.indexes()},
			})
			var ix []int
			if l.release != nil && w.end == l.release.call {
				ix = []int{l.release.inv}
			}
			in := in
			in.End = true
			p.Ops = append(p.Ops, porcupine.Operation{
				ClientId: clients[l.process], Input: in, Call: w.end, Return: w.end,
				Metadata: model.Meta{Partition: p.Name, Process: l.process, Indexes: ix},
			})
		}
	}
	for i := range r.ops {
		o := &r.ops[i]
		if (o.f != FRead && o.f != FWrite) || !o.hasValue || o.typ == Fail {
			continue
		}
		if o.f == FRead && o.typ != OK {
			continue
		}
		p := get(false, o.key)
		po := porcupine.Operation{ClientId: clients[o.process], Call: o.call, Return: o.ret,
			Metadata: model.Meta{Partition: p.Name, Process: o.process, Indexes: o.indexes()}}
		switch {
		case o.f == FRead:
			po.Input, po.Output = model.CounterInput{}, o.value
		case o.typ == OK:
			po.Input = model.CounterInput{Write: true, Value: o.value}
		default:
			po.Input, po.Return = model.CounterInput{Write: true, Maybe: true, Value: o.value}, r.last+1
		}
		p.Ops = append(p.Ops, po)
	}
	out := make([]*model.Part, 0, len(byName))
	for _, p := range byName {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *model.Part) int {
		if a.Lease != b.Lease {
			if a.Lease {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// owner names the holder of l for the lease model: its process, whatever
// its token, as the interval check does.
func owner(l *lease) string { return fmt.Sprintf("process %d", l.process) }
