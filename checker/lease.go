package checker

import (
	"math"
	"slices"
)

// A span is an interval of monotonic nanoseconds during which a lease was
// certainly held, opened by the ok acquire or extend by.
type span struct {
	start, end int64
	by         *op
}

// A lease is what an ok acquire granted, with the windows during which its
// holder certainly held it (see the package comment).
type lease struct {
	id       int
	process  int
	key      string
	token    string
	grant    int // the process's grant number, 0 if the history has none
	fence    int64
	node     string
	acquire  *op
	start    int64   // acquire ok time
	windows  []span  // certain ownership, disjoint and sorted; may be empty
	release  *op     // the release that ended the lease, or nil
	lost     *op     // the lost notification that ended its certain ownership, or nil
	extends  opTrail // ok extends and re-acquires of the lease: the first and last ten
	deadline int64   // last ValidUntil known; math.MaxInt64 if none
	lastSeen int64   // last completion of the holder while it held the lease
	closedAt int64   // invoke of the release or superseding acquire; math.MaxInt64 if none

	swept     int   // for a Stream: windows swept for double grants
	pairs     []int // for a Stream: ids of the leases found overlapping it
	held      bool  // for a Stream: its hold went to the stuck-lock rule while open
	heldEnd   int64 // the end of that hold
	busy      bool  // for a Stream: tries were decided busy under it while open
	busyUntil int64 // the latest invoke of those tries
	pinned    bool  // for a Stream: scratch for forget
}

// end returns the end of the lease's certain ownership, or its start if it
// has no window.
func (l *lease) end() int64 {
	if len(l.windows) == 0 {
		return l.start
	}
	return l.windows[len(l.windows)-1].end
}

// endedByRelease reports whether the lease ended at its release's invoke
// rather than at its deadline.
func (l *lease) endedByRelease() bool {
	return l.release != nil && len(l.windows) > 0 && l.end() == l.release.call
}

// indexes returns the history indexes of the lease's acquire, extends (the
// first and the last ten: a watchdog renews a lease held for hours many
// thousand times), lost notification and release.
func (l *lease) indexes() []int {
	ix := append(l.acquire.indexes(), l.extends.indexes()...)
	if l.lost != nil {
		ix = append(ix, l.lost.inv)
	}
	if l.release != nil {
		ix = append(ix, l.release.inv)
	}
	return ix
}

// addWindow records certain ownership from the return of o until its
// ValidUntil (or the last known deadline).
func (l *lease) addWindow(o *op) {
	t, vu := o.ret, o.validUntil
	if vu != 0 {
		l.deadline = vu
	}
	e := l.deadline
	if e <= t {
		return
	}
	if n := len(l.windows); n > 0 && t <= l.windows[n-1].end {
		l.windows[n-1].end = max(l.windows[n-1].end, e)
		return
	}
	l.windows = append(l.windows, span{t, e, o})
}

// cut ends certain ownership at t.
func (l *lease) cut(t int64) {
	w := l.windows[:0]
	for _, s := range l.windows {
		if s.start >= t {
			break
		}
		s.end = min(s.end, t)
		w = append(w, s)
	}
	l.windows = w
}

// leases returns the leases granted in list, in order of their acquire's
// invoke. A process holds at most one lease per key: an ok acquire under
// the lease it holds (see under) re-enters and extends it, and any other
// ends the old lease at its invoke.
func leases(list []op) []*lease {
	b := newLeaseBuilder()
	var all []*lease
	for i := range list {
		if l, _ := b.add(&list[i]); l != nil {
			all = append(all, l)
		}
	}
	b.finish()
	return all
}

// A leaseBuilder turns operations into leases, one operation at a time.
// Only the operations of one process affect its leases, so a [Stream] may
// feed each process's operations in its own invoke order, whatever the
// order between processes.
type leaseBuilder struct {
	held    map[procKey]*lease
	holding map[int][]*lease // process -> its open leases
}

// A procKey is a process and a key.
type procKey struct {
	process int
	key     string
}

func newLeaseBuilder() *leaseBuilder {
	return &leaseBuilder{held: make(map[procKey]*lease), holding: make(map[int][]*lease)}
}

// add applies o, the next operation of its process, and returns the lease
// it granted and the lease it closed (by a release or a new acquire), if
// any. A lease's id is its acquire's list position.
func (b *leaseBuilder) add(o *op) (created, closed *lease) {
	if o.completed() && o.typ != Info {
		for _, l := range b.holding[o.process] {
			l.lastSeen = max(l.lastSeen, o.ret)
		}
	}
	k := procKey{o.process, o.key}
	l := b.held[k]
	switch {
	case o.f == FAcquire && o.typ == OK:
		if l != nil && l.under(o, true) {
			l.extends.add(o)
			l.addWindow(o)
			return nil, nil
		}
		if l != nil {
			l.cut(o.call)
			l.closedAt = o.call
			b.holding[o.process] = without(b.holding[o.process], l)
			closed = l
		}
		l = &lease{id: o.seq, process: o.process, key: o.key, token: o.token, grant: o.grant,
			fence: o.fence, node: o.node, acquire: o, start: o.ret,
			deadline: math.MaxInt64, lastSeen: o.ret, closedAt: math.MaxInt64}
		l.addWindow(o)
		b.held[k] = l
		b.holding[o.process] = append(b.holding[o.process], l)
		return l, closed
	case o.f == FLost && l != nil && l.under(o, true):
		// The holder was told its lease is gone: its certain ownership ends
		// here. The lease stays its process's, so a later write under it
		// is judged stale (see judgeWrite), not ignored as after a release.
		l.cut(o.call)
		l.lost = o
	case o.f == FExtend && o.typ == OK && l != nil && l.under(o, false):
		l.extends.add(o)
		l.addWindow(o)
	case o.f == FRelease && l != nil && l.under(o, false):
		l.release = o
		l.cut(o.call)
		l.closedAt = o.call
		delete(b.held, k)
		b.holding[o.process] = without(b.holding[o.process], l)
		return nil, l
	}
	return nil, nil
}

// finish ends the history: a lease with no deadline and no release is
// held while its holder was seen alive.
func (b *leaseBuilder) finish() {
	for _, l := range b.held {
		if l.closedAt == math.MaxInt64 && l.deadline == math.MaxInt64 {
			l.cut(l.lastSeen)
		}
	}
}

// under reports whether o, an operation of l's process on l's key, was
// made under l: by grant number when both carry one (lockpick's harness
// numbers each process's grants), else by token when byToken (an empty one
// matches any), else always. Tokens are compared within one process only.
func (l *lease) under(o *op, byToken bool) bool {
	if l.grant != 0 && o.grant != 0 {
		return l.grant == o.grant
	}
	return !byToken || sameOwner(l.token, o.token)
}

func sameOwner(a, b string) bool { return a == "" || b == "" || a == b }

func without(ls []*lease, l *lease) []*lease {
	for i, x := range ls {
		if x == l {
			return append(ls[:i], ls[i+1:]...)
		}
	}
	return ls
}

// Holders returns, sorted, the processes that certainly hold a lease at
// monotonic time at, by the lease rules of [Check]. A harness uses it to aim
// a fault at the current holder while the history is still being recorded.
func Holders(h History, at int64) []int {
	list, _ := ops(h)
	var out []int
	for _, l := range leases(list) {
		for _, w := range l.windows {
			if w.start <= at && at < w.end && !slices.Contains(out, l.process) {
				out = append(out, l.process)
			}
		}
	}
	slices.Sort(out)
	return out
}

// MayHoldUntil returns the monotonic time after which no lease of h can
// still be held, by the lease rules of [Check]: the possible end of every
// lease and, for an acquire or extend whose outcome is unknown, its invoke
// plus opt.MaxTTL (or the longest lease in h). It returns 0 when nothing in
// h may hold a lease. A harness that replays a schedule waits for it, so
// that each replay starts with the lock free by the checker's reckoning.
// It bounds what the clients were told (ValidUntil), not how long a key
// lives on a server: a late SET, or a server clock that runs slow, can keep
// the key a little longer, and a lease without a deadline ends at its
// holder's last completion.
func MayHoldUntil(h History, opt *Options) int64 {
	list, _ := ops(h)
	r := &run{opt: opt.withDefaults(), leases: leases(list)}
	var until int64
	for _, l := range r.leases {
		until = max(until, possibleEnd(l))
	}
	ttl := r.maxTTL()
	for i := range list {
		o := &list[i]
		if (o.f == FAcquire || o.f == FExtend) && o.typ == Info {
			until = max(until, o.call+ttl)
		}
	}
	return until
}
