package trial

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// counterKey is the protected resource's key in histories.
const counterKey = "counter"

// A worker is one client looping acquire → read the counter → hold → write
// counter+1 → release, emitting an event for every step.
type worker struct {
	process  int
	s        scenario.Scenario
	subj     subject.Subject
	res      *resourceClient
	emit     func(checker.Event)
	mono     *monoClock
	late     time.Duration // how long after the trial's start the worker began
	problems *problemLog
	grants   int          // leases granted so far; the last one's number
	current  atomic.Int64 // the number of the lease the lock's renewals are of
	// inPlace, if set, is closed once the faults due by start_after are
	// injected: the first attempt waits for it too (see nemesis.inPlace).
	inPlace <-chan struct{}
}

// A grant is a lease the worker holds, with the number the worker gave it:
// its grant number, from 1, which with the process names the lease in the
// history ([checker.Event].Grant), whatever token the lock handed out.
type grant struct {
	subject.Grant
	n int
}

// newWorker returns client p of s, with its subject built on tgt, emitting
// events through emit and its subject's troubles into problems.
func newWorker(p int, s scenario.Scenario, tgt *subject.Target, emit func(checker.Event), problems *problemLog) *worker {
	w := &worker{process: p, s: s, emit: emit, mono: newMonoClock(s.Lock.Skew(p)), problems: problems}
	w.subj = subject.New(subject.Config{Target: tgt, Lock: s.Lock, Fenced: s.Fenced, Process: p, OnRenew: w.renewed,
		ClockShimDir: ShimCache()})
	return w
}

// renewed records a renewal the lock made on its own as an extend of the
// lease held: a lock's watchdog runs from its grant until its release
// returns (lockcore's Unlock waits for it).
func (w *worker) renewed(r lockcore.Renewal) {
	e := checker.Event{Process: w.process, F: checker.FExtend, Key: w.s.Lock.Key, Token: r.Token, Grant: int(w.current.Load())}
	switch {
	case !r.Done:
		e.Type = checker.Invoke
	case r.Err == nil:
		e.Type, e.ValidUntil = checker.OK, w.mono.at(r.ValidUntil)
	default:
		e.Type, e.Error = subject.Outcome(r.Err), r.Err.Error()
	}
	w.emit(e)
}

// warmUp starts the worker's subject and waits until it answers, if it is
// a [subject.Warmer]; see [subject.Warmer.WarmUp].
func (w *worker) warmUp(ctx context.Context) error {
	if wu, ok := w.subj.(subject.Warmer); ok {
		return wu.WarmUp(ctx)
	}
	return nil
}

// warmUpAll warms every worker's subject up at once; it returns the first
// client's error.
func warmUpAll(ctx context.Context, workers []*worker) error {
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() { errs[i] = w.warmUp(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// finish closes the worker's subject and adds what its health check says
// to the problems; it returns the error of a subject that never answered
// (see [clientErrors.judge]).
func (w *worker) finish() error {
	subject.Close(w.subj)
	h, ok := w.subj.(subject.HealthReporter)
	if !ok {
		return nil
	}
	err := h.Health()
	switch {
	case errors.Is(err, subject.ErrUnusable), errors.Is(err, subject.ErrSilent):
		return err
	case err != nil:
		w.problems.add("%v", err)
	}
	return nil
}

// A problemLog collects, for a trial's evidence, what went wrong with the
// harness or the subject. It is safe for concurrent use.
type problemLog struct {
	mu   sync.Mutex
	list []string
}

func (p *problemLog) add(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, fmt.Sprintf(format, a...))
}

func (p *problemLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.list)
}

func (w *worker) run(ctx context.Context) {
	defer w.res.close()
	if !sleep(ctx, w.s.StartAfter.D()+time.Duration(w.process-1)*w.s.Stagger.D()-w.late) {
		return
	}
	if w.inPlace != nil {
		select {
		case <-w.inPlace:
		case <-ctx.Done():
			return
		}
	}
	limit := 0
	if w.process <= len(w.s.Cycles) {
		limit = w.s.Cycles[w.process-1]
	}
	for cycles := 0; ctx.Err() == nil && (limit == 0 || cycles < limit); {
		lease, ok := w.acquire(ctx, 0)
		if !ok {
			sleep(ctx, w.s.Lock.RetryDelay.D())
			continue
		}
		cycles++
		inner := w.reenter(ctx, lease)
		w.criticalSection(ctx, lease)
		w.unwind(inner)
		w.release(lease)
		// Pause before trying again, as a client with other work would, so
		// the releaser does not win every race for the lock it just freed.
		sleep(ctx, w.s.Lock.RetryDelay.D())
	}
}

// acquire locks the key; an ok grant opens a lease with the next grant
// number, or, for a re-entry (reenter > 0), is under lease number reenter.
func (w *worker) acquire(ctx context.Context, reenter int) (grant, bool) {
	key := w.s.Lock.Key
	w.emit(checker.Event{Process: w.process, Type: checker.Invoke, F: checker.FAcquire, Key: key})
	if wait := w.s.Lock.Wait.D(); wait > 0 {
		// a blocking acquire that waits at most its wait time
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	if reenter == 0 {
		// A lock may report a renewal the instant it grants (a lock program
		// writes it right after its reply): it is of the lease this acquire
		// opens. No renewal of the last lease comes after its release.
		w.current.Store(int64(w.grants + 1))
	}
	g, err := w.subj.Acquire(ctx)
	if err == nil && g.ValidUntil.IsZero() {
		// The history cannot place a lease without its end: the lock may
		// be held, for how long nobody can say.
		err = &lockcore.OpError{Op: "acquire", Key: key, Indeterminate: true, Err: errNoDeadline}
		w.problems.add("client %d: the lock under test granted a lock without a deadline (Grant.ValidUntil)", w.process)
	}
	if err != nil {
		w.emit(checker.Event{Process: w.process, Type: subject.Outcome(err), F: checker.FAcquire, Key: key, Node: g.Node, Error: err.Error()})
		return grant{}, false
	}
	l := grant{g, reenter}
	if reenter == 0 {
		w.grants++
		l.n = w.grants
	}
	w.emit(checker.Event{Process: w.process, Type: checker.OK, F: checker.FAcquire, Key: key, Node: g.Node,
		Token: g.Token, Grant: l.n, Fence: g.Fence, ValidUntil: w.mono.at(g.ValidUntil)})
	return l, true
}

// reenter locks the held lock again Lock.Reenter times, as nested code
// does; each re-lock is an acquire in the history, with l's grant number (it
// adds a window to l). It returns how many succeeded.
func (w *worker) reenter(ctx context.Context, l grant) int {
	n := 0
	for range w.s.Lock.Reenter {
		if _, ok := w.acquire(ctx, l.n); !ok {
			w.problems.add("client %d: re-entering the lock it held failed", w.process)
			break
		}
		n++
	}
	return n
}

// unwind unlocks n re-entries. They are not history events: a release in
// the history ends the holder's lease, and these leave the outer hold in
// place. One that fails makes the trial inconclusive.
func (w *worker) unwind(n int) {
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := w.subj.Release(ctx)
		cancel()
		if err != nil {
			w.problems.add("client %d: an inner unlock of the re-entered lock failed: %v", w.process, err)
			return
		}
	}
}

// criticalSection increments the counter under the lease. It does not check
// its own deadline before writing, like most code in the wild: a pause
// between the check and the write would defeat the check anyway. It does
// heed a lock that tells it the lease is lost (Grant.Lost), as code using
// such a lock should: it records the notification and does not write.
func (w *worker) criticalSection(ctx context.Context, lease grant) {
	if w.res == nil {
		w.hold(ctx, lease)
		return
	}
	// Each step gets its own bounded context: the trial's end must not turn
	// a write already sent into an unknown outcome.
	op := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 2*time.Second)
	}
	rctx, cancel := op()
	rd := checker.Event{Process: w.process, Type: checker.Invoke, F: checker.FRead, Key: counterKey, Token: lease.Token, Grant: lease.n, Fence: lease.Fence}
	w.emit(rd)
	v, err := w.res.read(rctx, lease.Fence)
	cancel()
	if err != nil {
		rd.Type, rd.Error = checker.Fail, err.Error()
		if errors.Is(err, errFenced) {
			rd.Error = "fenced: " + err.Error()
		}
		w.emit(rd)
		return
	}
	rd.Type, rd.Value = checker.OK, checker.IntValue(v)
	w.emit(rd)
	if !w.hold(ctx, lease) {
		return
	}
	wctx, cancel := op()
	defer cancel()
	ev := checker.Event{Process: w.process, F: checker.FWrite, Key: counterKey, Token: lease.Token, Grant: lease.n, Fence: lease.Fence,
		Value: checker.IntValue(v + 1)}
	ev.Type = checker.Invoke
	w.emit(ev)
	switch err := w.res.write(wctx, v+1, lease.Fence); {
	case err == nil:
		ev.Type = checker.OK
	case errors.Is(err, errFenced):
		ev.Type, ev.Error = checker.Fail, "fenced: "+err.Error()
	default:
		ev.Type, ev.Error = checker.Info, err.Error()
	}
	w.emit(ev)
}

// hold waits out the hold time, or until ctx ends, watching the lease: if
// the lock says it is lost, hold records the notification and returns
// false.
func (w *worker) hold(ctx context.Context, lease grant) bool {
	t := time.NewTimer(w.s.Hold.D())
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-lease.Lost: // a nil channel never fires
		w.emit(checker.Event{Process: w.process, Type: checker.Info, F: checker.FLost, Key: w.s.Lock.Key,
			Token: lease.Token, Grant: lease.n, Error: "the lock says the lease is lost"})
		return false
	}
	return true
}

// release runs with its own short context so the last lease of a trial is
// released (and recorded) even after the trial's context ended.
func (w *worker) release(lease grant) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	e := checker.Event{Process: w.process, Type: checker.Invoke, F: checker.FRelease, Key: w.s.Lock.Key, Token: lease.Token, Grant: lease.n}
	w.emit(e)
	node, err := w.subj.Release(ctx)
	e.Type, e.Node = checker.OK, node
	if err != nil {
		e.Type, e.Error = subject.Outcome(err), err.Error()
	}
	w.emit(e)
}

// errNoDeadline is the error recorded for a grant without a deadline.
var errNoDeadline = errors.New("subject error: granted without a deadline")

// sleep waits d or until ctx ends; it reports whether the full d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
