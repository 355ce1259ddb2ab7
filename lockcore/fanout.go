package lockcore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Multi-node locks send every request to all their nodes at once. Each node
// has a nodeWorker: a goroutine that sends that node's requests one after
// the other, on a connection of its own, and outlives a single call.
//
// Requests to one node stay in order. A call may return as soon as a
// majority answered, or when the node timeout passed; a later release on a
// straggling node is queued behind the request still in flight there, so it
// can never overtake it (a release arriving before its SET would leave the
// key locked until its TTL). If that SET is itself still queued, unsent,
// the two cancel out and neither is sent: a lagging node catches up.
//
// The node timeout is enforced by the caller's own timer, not only by the
// request's context: a go-redis client without ContextTimeoutEnabled ignores
// context deadlines on the socket and would block for its ReadTimeout.
//
// A goroutine started per request would grow its stack through go-redis's
// deep call path every time; a long-lived one keeps its grown stack. A
// dedicated connection spares every request the pool's health checks.

// workerIdle is how long a nodeWorker waits for work before it exits and
// gives its connection back to the pool.
const workerIdle = 2 * time.Second

// errNoReply is the error of a node that did not answer within the node
// timeout.
var errNoReply = errors.New("no reply within the node timeout")

// A nodeJob is one node's part of a fanout.
type nodeJob struct {
	f *fanout
	i int
}

// A nodeWorker runs the jobs for one node, in submission order.
type nodeWorker struct {
	rdb  redis.Scripter
	conn *redis.Conn // owned by the running worker goroutine

	mu      sync.Mutex
	queue   []nodeJob
	head    int
	running bool
	wake    chan struct{}
}

// connecter is the optional ability to hand out a dedicated connection;
// go-redis clients have it.
type connecter interface {
	Conn() *redis.Conn
}

func newNodeWorker(rdb redis.Scripter) *nodeWorker {
	return &nodeWorker{rdb: rdb, wake: make(chan struct{}, 1)}
}

func (w *nodeWorker) client() redis.Scripter {
	if w.conn != nil {
		return w.conn
	}
	if c, ok := w.rdb.(connecter); ok {
		w.conn = c.Conn()
		return w.conn
	}
	return w.rdb
}

// dropConn gives the connection back to the pool (which discards it if it
// broke).
func (w *nodeWorker) dropConn() {
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn = nil
	}
}

func (w *nodeWorker) submit(j nodeJob) {
	w.mu.Lock()
	if a, ok := w.unsentAcquire(j); ok {
		w.mu.Unlock()
		// The SET was never sent, so there is nothing to release: drop both.
		a.f.record(a.i, false, nil)
		j.f.record(j.i, false, nil)
		return
	}
	w.queue = append(w.queue, j)
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.loop()
		return
	}
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// unsentAcquire removes and returns the queued acquire that the release j
// undoes, if it has not been sent yet. A node that lags a round trip behind
// the majority (its requests queue up behind the one in flight) so skips
// an acquire and its release instead of sending both. The caller holds w.mu.
func (w *nodeWorker) unsentAcquire(j nodeJob) (nodeJob, bool) {
	if j.f.op != opRelease {
		return nodeJob{}, false
	}
	for k := w.head; k < len(w.queue); k++ {
		if a := w.queue[k]; a.f.op == opAcquire && a.f.token == j.f.token {
			copy(w.queue[k:], w.queue[k+1:])
			w.queue[len(w.queue)-1] = nodeJob{}
			w.queue = w.queue[:len(w.queue)-1]
			return a, true
		}
	}
	return nodeJob{}, false
}

func (w *nodeWorker) next() (nodeJob, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head == len(w.queue) {
		w.queue, w.head = w.queue[:0], 0
		return nodeJob{}, false
	}
	j := w.queue[w.head]
	w.queue[w.head] = nodeJob{}
	w.head++
	return j, true
}

func (w *nodeWorker) loop() {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		for j, ok := w.next(); ok; j, ok = w.next() {
			if err := j.f.run(j.i, w); err != nil {
				w.dropConn() // it may be broken, or carry a late reply
			}
		}
		idle.Reset(workerIdle)
		select {
		case <-w.wake:
		case <-idle.C:
			w.mu.Lock()
			if w.head == len(w.queue) {
				w.dropConn() // before a new worker may start
				w.running = false
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
		}
	}
}

// A reply is one node's answer to a fanout request.
type reply uint8

const (
	pending reply = iota
	yes           // acquired, released or extended
	no            // the node answered: not ours
	failed        // the node could not be asked, or did not answer in time
)

// A nodeRequest sends one request to node i through c and reports whether
// the node did what was asked.
type nodeRequest func(ctx context.Context, i int, c redis.Scripter) (bool, error)

// A fanout is one request sent to several nodes, and the tally of replies.
type fanout struct {
	fanoutSpec
	ctx      context.Context // the caller's values, never its cancellation
	deadline time.Time
	notify   chan struct{} // signalled when the tally may satisfy enough

	mu                    sync.Mutex
	expired               bool
	replies               []reply
	sent, yes, no, failed int
	errs                  []error
}

// Fanout operations.
const (
	opAcquire = "acquire"
	opRelease = "release"
	opExtend  = "extend"
)

// A fanoutSpec describes a request to several nodes.
type fanoutSpec struct {
	op, key string
	token   string // the lease's token
	workers []*nodeWorker
	nodes   []int // the nodes to ask, as indexes into workers
	// timeout bounds each node's answer, from the start of the fanout.
	timeout time.Duration
	// skipLate drops a node's request whose turn comes after the deadline
	// (acquire, extend); a release is always sent.
	skipLate bool
	// enough reports whether the caller may stop waiting.
	enough func(tally) bool
	req    nodeRequest
}

// startFanout sends the request to each node through its worker and
// returns at once. A node that has not answered within the timeout counts
// as failed. The request itself still runs if ctx is cancelled (a release
// must never be skipped).
func startFanout(ctx context.Context, spec fanoutSpec) *fanout {
	f := &fanout{
		fanoutSpec: spec,
		ctx:        context.WithoutCancel(ctx),
		deadline:   time.Now().Add(spec.timeout),
		notify:     make(chan struct{}, 1),
		replies:    make([]reply, len(spec.workers)),
		sent:       len(spec.nodes),
	}
	for _, i := range spec.nodes {
		spec.workers[i].submit(nodeJob{f: f, i: i})
	}
	return f
}

// run sends node i's request through w's connection and returns the
// request's error.
func (f *fanout) run(i int, w *nodeWorker) error {
	if f.skipLate {
		f.mu.Lock()
		expired := f.expired
		f.mu.Unlock()
		if expired {
			return nil
		}
	}
	ok, err := f.try(i, w.client())
	if err != nil && f.op == opRelease && !isReply(err) {
		// A release is idempotent (compare-and-delete by token) and must
		// reach every node, or the key blocks a majority until its TTL: a
		// connection that a fault broke since the last request gets one
		// more try on a fresh one.
		w.dropConn()
		ok, err = f.try(i, w.client())
	}
	f.record(i, ok, err)
	return err
}

// try sends the request once, bounded by the node timeout.
func (f *fanout) try(i int, c redis.Scripter) (bool, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.timeout)
	defer cancel()
	return f.req(ctx, i, c)
}

// isReply reports whether err is an error reply from Redis itself, after
// which the request surely reached the node.
func isReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// record tallies node i's reply and wakes the caller if it may be done.
func (f *fanout) record(i int, ok bool, err error) {
	f.mu.Lock()
	if f.replies[i] == pending {
		switch {
		case err != nil:
			f.replies[i] = failed
			f.failed++
			f.errs = append(f.errs, nodeError(i, NewOpError(f.op, f.key, err)))
		case ok:
			f.replies[i] = yes
			f.yes++
		default:
			f.replies[i] = no
			f.no++
		}
	}
	t := tally{sent: f.sent, yes: f.yes, no: f.no, failed: f.failed}
	f.mu.Unlock()
	// Wake the caller only when it may be done: each wake-up costs a
	// goroutine switch on the critical path.
	if t.done() || f.enough(t) {
		select {
		case f.notify <- struct{}{}:
		default:
		}
	}
}

// expire counts every node that has not answered as failed.
func (f *fanout) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = true
	for _, i := range f.nodes {
		if f.replies[i] == pending {
			f.replies[i] = failed
			f.failed++
			f.errs = append(f.errs, nodeError(i, NewOpError(f.op, f.key, errNoReply)))
		}
	}
}

// A tally is a snapshot of a fanout's replies.
type tally struct {
	sent, yes, no, failed int
}

func (t tally) done() bool { return t.yes+t.no+t.failed == t.sent }

// wait blocks until enough holds for the current tally, or every node has
// answered or timed out, and returns the tally. It returns ctx.Err() if ctx
// ends first; the requests go on regardless.
func (f *fanout) wait(ctx context.Context) (tally, error) {
	var timer *time.Timer
	for {
		t := f.tally()
		if t.done() || f.enough(t) {
			if timer != nil {
				timer.Stop()
			}
			return t, nil
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(f.deadline))
		}
		select {
		case <-f.notify:
		case <-timer.C:
			f.expire()
		case <-ctx.Done():
			timer.Stop()
			return f.tally(), ctx.Err()
		}
	}
}

func (f *fanout) tally() tally {
	f.mu.Lock()
	defer f.mu.Unlock()
	return tally{sent: f.sent, yes: f.yes, no: f.no, failed: f.failed}
}

// granted returns the nodes that answered yes, in index order.
func (f *fanout) granted() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for i, x := range f.replies {
		if x == yes {
			out = append(out, i)
		}
	}
	return out
}

// errors returns the node errors received so far.
func (f *fanout) errors() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

func nodeError(i int, err error) error { return fmt.Errorf("node %d: %w", i, err) }
