package scenarios

import (
	"context"
	"errors"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/lockcore"
)

// A worker is one client looping acquire → hold → release, recording each
// operation.
type worker struct {
	process int
	s       Scenario
	subj    subject
	rec     *checker.Recorder
	mono    *monoClock
}

func (w *worker) run(ctx context.Context) {
	if !sleep(ctx, w.s.StartAfter.D()) {
		return
	}
	for ctx.Err() == nil {
		lease := w.acquire(ctx)
		if lease == nil {
			sleep(ctx, w.s.Lock.RetryDelay.D())
			continue
		}
		sleep(ctx, w.s.Hold.D())
		w.release(lease)
	}
}

func (w *worker) acquire(ctx context.Context) *lockcore.Lease {
	key := w.s.Lock.Key
	w.rec.Record(checker.Event{Process: w.process, Type: checker.Invoke, F: "acquire", Key: key})
	lease, node, err := w.subj.acquire(ctx)
	if err != nil {
		w.rec.Record(checker.Event{Process: w.process, Type: outcome(err), F: "acquire", Key: key, Node: node, Error: err.Error()})
		return nil
	}
	w.rec.Record(checker.Event{Process: w.process, Type: checker.OK, F: "acquire", Key: key, Node: node,
		Token: lease.Token, Fence: lease.Fence, ValidUntil: w.mono.at(lease.ValidUntil())})
	return lease
}

// release runs with its own short context so the last lease of a trial is
// released (and recorded) even after the trial's context ended.
func (w *worker) release(lease *lockcore.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	key := w.s.Lock.Key
	w.rec.Record(checker.Event{Process: w.process, Type: checker.Invoke, F: "release", Key: key, Token: lease.Token})
	node, err := w.subj.release(ctx)
	if err != nil {
		w.rec.Record(checker.Event{Process: w.process, Type: outcome(err), F: "release", Key: key, Node: node, Token: lease.Token, Error: err.Error()})
		return
	}
	w.rec.Record(checker.Event{Process: w.process, Type: checker.OK, F: "release", Key: key, Node: node, Token: lease.Token})
}

// outcome maps a lock error to a history type: fail when the operation surely
// did not take effect, info when it may have.
func outcome(err error) checker.Type {
	var oe *lockcore.OpError
	if errors.As(err, &oe) && oe.Indeterminate {
		return checker.Info
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return checker.Info
	}
	return checker.Fail
}

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
