package checker

import (
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockpick/lockpick/checker/internal/model"
)

// CheckVerbose is like [CheckTimeout], and also writes porcupine's HTML
// visualization of the history to w: one partition per lock key (lease
// operations) and per resource key (reads and writes), with nemesis events
// and anomalies shown as annotations. The visualization search gets the
// time left of timeout (0 means no limit); if it runs out, the partial
// linearizations found so far are shown. The error is w's.
func CheckVerbose(h History, opt *Options, timeout time.Duration, w io.Writer) (Result, error) {
	start := time.Now()
	res := check(h, opt, timeout)
	left := time.Duration(0)
	if timeout > 0 {
		left = max(timeout-time.Since(start), 1)
	}
	r := newRun(h, opt)
	var ops []porcupine.Operation
	for _, p := range r.parts() {
		ops = append(ops, p.Ops...)
	}
	m := model.New()
	_, info := porcupine.CheckOperationsVerbose(m, ops, left)
	info.AddAnnotations(r.annotations(res))
	return res, porcupine.Visualize(m, info, w)
}

// VisualizePath is like [CheckVerbose], writing the visualization to the
// file at path, atomically. It returns the os error, if any.
func VisualizePath(h History, opt *Options, timeout time.Duration, path string) (res Result, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return check(h, opt, timeout), err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if res, err = CheckVerbose(h, opt, timeout, f); err != nil {
		return res, err
	}
	if err = f.Chmod(0o644); err != nil {
		return res, err
	}
	if err = f.Close(); err != nil {
		return res, err
	}
	return res, os.Rename(f.Name(), path)
}

// annotations returns the nemesis events and the anomalies of res as
// porcupine annotations.
func (r *run) annotations(res Result) []porcupine.Annotation {
	var as []porcupine.Annotation
	for i := range r.ops {
		o := &r.ops[i]
		if o.f != FNemesis {
			continue
		}
		end := o.ret
		if !o.completed() {
			end = r.last
		}
		as = append(as, porcupine.Annotation{
			Tag: "nemesis", Start: o.call, End: end, Description: o.text,
			Details:         string(o.typ) + " at " + r.clock.at(o.call),
			BackgroundColor: "#ffe9a8",
		})
	}
	times := make(map[int]int64, len(r.h))
	for i := range r.h {
		times[r.h[i].Index] = r.h[i].Time
	}
	add := func(a Anomaly, color string) {
		start, end := int64(0), int64(0)
		first := true
		span := func(s, e int64) {
			if first || s < start {
				start = s
			}
			if first || e > end {
				end = e
			}
			first = false
		}
		for _, w := range a.Windows {
			span(w.Start, w.End)
		}
		for _, ix := range a.Ops {
			if t, ok := times[ix]; ok {
				span(t, t)
			}
		}
		if first {
			return
		}
		desc := string(a.Kind)
		if a.Prevented {
			desc = "prevented " + desc
		}
		as = append(as, porcupine.Annotation{
			Tag: "anomalies", Start: start, End: min(end, r.last), Description: desc,
			Details: a.Message, BackgroundColor: color,
		})
	}
	for _, a := range res.Anomalies {
		add(a, "#ffb3b3")
	}
	for _, a := range res.Prevented {
		add(a, "#c8f0c8")
	}
	return as
}
