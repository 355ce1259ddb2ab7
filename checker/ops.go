package checker

import "math"

// An op is an operation rebuilt from its invoke event and its completion.
type op struct {
	seq        int // position in the list of operations (invoke order)
	process    int
	f          string
	key        string
	typ        Type  // completion type; Info if it never completed
	call       int64 // invoke time
	ret        int64 // completion time; math.MaxInt64 if it never completed
	inv, done  int   // Event.Index of invoke and completion; done is -1 if none
	token      string
	grant      int // the process's grant number of the lease it is under, 0 if unknown
	fence      int64
	validUntil int64
	node       string
	value      int64 // Int() of the completion, else of the invoke
	hasValue   bool
	text       string // for nemesis: Text() of the completion, else of the invoke
	err        string
}

// completed reports whether o has a completion event.
func (o *op) completed() bool { return o.done >= 0 }

// indexes returns the history indexes of o's events.
func (o *op) indexes() []int {
	if o.done < 0 || o.done == o.inv {
		return []int{o.inv}
	}
	return []int{o.inv, o.done}
}

// An opTrail sums up a sequence of operations that may grow with the
// history (a run of failed acquires, a lease's renewals): how many, and the
// first and the last ten, which are what an anomaly cites of it.
type opTrail struct {
	n    int
	head []*op
	tail [10]*op // the last ten, by n modulo 10
}

func (t *opTrail) add(o *op) {
	if len(t.head) < 10 {
		t.head = append(t.head, o)
	}
	t.tail[t.n%10] = o
	t.n++
}

// indexes returns the history indexes of the first and the last ten
// operations, in order.
func (t *opTrail) indexes() []int {
	var ix []int
	for _, o := range t.head {
		ix = append(ix, o.indexes()...)
	}
	for i := max(10, t.n-10); i < t.n; i++ {
		ix = append(ix, t.tail[i%10].indexes()...)
	}
	return ix
}

// A thread is where a process runs one operation at a time: its own calls,
// or, for extends, its lock's renewals (a watchdog), which run beside them.
// It maps a process to the position in the list of its open operation.
type thread map[int]int

// threads holds the open operations of every process, on both its threads.
type threads struct{ calls, extends thread }

func (t threads) of(e *Event) thread {
	if e.F == FExtend {
		return t.extends
	}
	return t.calls
}

// ops pairs the events of h into operations, in invoke order. A completion
// belongs to the open invoke of its process with the same F; an invoke that
// is followed by another invoke of its process, or by the end of the
// history, is left as Info. Extends pair on their own, so a renewal may run
// while its holder reads or writes. unmatched counts completions without an
// invoke, except lone nemesis and lost events, which become operations of
// their own.
func ops(h History) (list []op, unmatched int) {
	n := 0 // an operation per invoke, at most one per nemesis completion
	for i := range h {
		if h[i].Type == Invoke || lone(h[i].F) {
			n++
		}
	}
	list = make([]op, 0, n) // growing a long list would cost more than counting
	open := threads{make(thread), make(thread)}
	for i := range h {
		e := &h[i]
		if e.Type == Invoke {
			list = append(list, op{seq: len(list),
				process: e.Process, f: e.F, key: e.Key, typ: Info,
				call: e.Time, ret: math.MaxInt64, inv: e.Index, done: -1,
			})
			list[len(list)-1].merge(e)
			open.of(e)[e.Process] = len(list) - 1
			continue
		}
		j, ok := open.of(e)[e.Process]
		if !ok || list[j].f != e.F {
			if lone(e.F) {
				o := op{seq: len(list), process: e.Process, f: e.F, key: e.Key, typ: e.Type,
					call: e.Time, ret: e.Time, inv: e.Index, done: e.Index}
				o.merge(e)
				list = append(list, o)
			} else {
				unmatched++
			}
			continue
		}
		delete(open.of(e), e.Process)
		o := &list[j]
		o.typ, o.ret, o.done = e.Type, e.Time, e.Index
		o.merge(e)
	}
	return list, unmatched
}

// lone reports whether events of kind f stand alone, without an invoke:
// nemesis notes and lost notifications.
func lone(f string) bool { return f == FNemesis || f == FLost }

// merge copies the fields e sets into o; later events win.
func (o *op) merge(e *Event) {
	if e.Key != "" {
		o.key = e.Key
	}
	if e.Token != "" {
		o.token = e.Token
	}
	if e.Grant != 0 {
		o.grant = e.Grant
	}
	if e.Fence != 0 {
		o.fence = e.Fence
	}
	if e.ValidUntil != 0 {
		o.validUntil = e.ValidUntil
	}
	if e.Node != "" {
		o.node = e.Node
	}
	if e.Error != "" {
		o.err = e.Error
	}
	if n, ok := e.Int(); ok {
		o.value, o.hasValue = n, true
	}
	if len(e.Value) > 0 && e.F == FNemesis { // only the nemesis timeline shows it
		o.text = e.Text()
	}
}
