package checker

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// A part is one partition of the porcupine search: the lease operations of
// one lock key, or the reads and writes of one resource key.
type part struct {
	name  string
	lease bool // lease operations, else counter operations
	key   string
	ops   []porcupine.Operation
	res   porcupine.CheckResult
}

// parts returns the partitions of r, lock keys first, each sorted by name.
func (r *run) parts() []*part {
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
	byKind := make(map[kind]*part)
	byName := make(map[string]*part)
	get := func(lease bool, key string) *part {
		if p := byKind[kind{lease, key}]; p != nil {
			return p
		}
		name := fmt.Sprintf("counter %q", key)
		if lease {
			name = fmt.Sprintf("lock %q", key)
		}
		p := byName[name]
		if p == nil {
			p = &part{name: name, lease: lease, key: key}
			byName[name] = p
		}
		byKind[kind{lease, key}] = p
		return p
	}
	for _, l := range r.leases {
		p := get(true, l.key)
		in := leaseInput{owner: owner(l)}
		for _, w := range l.windows {
			p.ops = append(p.ops, porcupine.Operation{
				ClientId: clients[l.process], Input: in, Call: w.by.call, Return: w.start,
				Metadata: opMeta{p.name, l.process, w.by.indexes()},
			})
			var ix []int
			if l.release != nil && w.end == l.release.call {
				ix = []int{l.release.inv}
			}
			in := in
			in.end = true
			p.ops = append(p.ops, porcupine.Operation{
				ClientId: clients[l.process], Input: in, Call: w.end, Return: w.end,
				Metadata: opMeta{p.name, l.process, ix},
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
			Metadata: opMeta{p.name, o.process, o.indexes()}}
		switch {
		case o.f == FRead:
			po.Input, po.Output = counterInput{}, o.value
		case o.typ == OK:
			po.Input = counterInput{write: true, value: o.value}
		default:
			po.Input, po.Return = counterInput{write: true, maybe: true, value: o.value}, r.last+1
		}
		p.ops = append(p.ops, po)
	}
	out := make([]*part, 0, len(byName))
	for _, p := range byName {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *part) int {
		if a.lease != b.lease {
			if a.lease {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.name, b.name)
	})
	return out
}

// owner names the holder of l for the lease model: its token, or its
// process if it has none.
func owner(l *lease) string {
	if l.token != "" {
		return l.token
	}
	return fmt.Sprintf("process %d", l.process)
}

// search checks every partition with porcupine, at most GOMAXPROCS at a
// time, each with the given timeout (0 means none), and sets its res.
func search(parts []*part, timeout time.Duration) {
	m := model()
	m.Partition = nil
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	deadline := time.Now().Add(timeout)
	for _, p := range parts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			left := time.Duration(0)
			if timeout > 0 {
				if left = time.Until(deadline); left <= 0 {
					p.res = porcupine.Unknown
					return
				}
			}
			p.res = porcupine.CheckOperationsTimeout(m, p.ops, left)
		})
	}
	wg.Wait()
}
