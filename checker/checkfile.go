package checker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A Summary tells what [CheckFile] read besides the result, and how it
// checked it.
type Summary struct {
	// Events is the number of events in the file.
	Events int
	// Grant is the ok acquire with the latest time (the last of equal
	// times), or nil if the lock was never granted.
	Grant *Event
	// Lateness is how far out of time order the file is: the most an
	// event's time is before that of an event on an earlier line (0 if
	// the file is in time order).
	Lateness time.Duration
	// Reorder is the window the stream took events out of order in (see
	// [Options].Reorder): the file's Lateness when that was more than the
	// window asked for but no more than [MaxReorder].
	Reorder time.Duration
	// Fallback is nil if the file was checked as a stream, else why it
	// was read whole and checked by [CheckTimeout] (it wraps
	// [ErrTimeOrder] or [ErrNeedHistory]).
	Fallback error
	_        struct{} // disallow positional literals, for extensibility
}

// MaxReorder is the widest window [CheckFile] gives a stream on its own,
// when [Options].Reorder is not set: a file out of time order by more is
// checked whole.
const MaxReorder = 10 * time.Second

// Path says in a line how the file was checked: streamed (and how far out
// of time order), or read whole and why.
func (s Summary) Path() string {
	if s.Fallback != nil {
		return fmt.Sprintf("checked whole (out of time order by %s): %v", s.Lateness, s.Fallback)
	}
	if s.Lateness == 0 {
		return "streamed, in time order"
	}
	return fmt.Sprintf("streamed, out of time order by %s (window %s)", s.Lateness, s.Reorder)
}

// CheckFile checks the history at path (a JSON Lines file, gzipped or not,
// or a run folder holding history.jsonl or history.jsonl.gz) and returns
// what CheckTimeout(ReadFile(path), opt, timeout) returns, streaming it
// through a [Stream] in flat memory. A file out of time order by more than
// the stream's window is streamed again with the window set to its
// Lateness, if opt does not set Reorder and that is at most [MaxReorder].
// When no stream can give the result (events further out of time order, a
// lost update to explain, see [ErrNeedHistory]), it reads the file whole
// and calls CheckTimeout. Errors are those of ReadFile.
//
// The stream runs no search, so timeout only bounds the searches of a file
// checked whole; a streamed check never ends Unknown.
func CheckFile(path string, opt *Options, timeout time.Duration) (Result, Summary, error) {
	path, err := historyPath(path)
	if err != nil {
		return Result{}, Summary{}, err
	}
	res, sum, err := streamFile(path, opt)
	if err != nil || sum.Fallback == nil {
		return res, sum, err
	}
	if wide := sum.Lateness; errors.Is(sum.Fallback, ErrTimeOrder) && (opt == nil || opt.Reorder == 0) && wide <= MaxReorder {
		o := Options{}
		if opt != nil {
			o = *opt
		}
		o.Reorder = max(wide, 1)
		if res, sum, err = streamFile(path, &o); err != nil || sum.Fallback == nil {
			return res, sum, err
		}
	}
	h, err := ReadFile(path)
	if err != nil {
		return Result{}, Summary{}, err
	}
	return CheckTimeout(h, opt, timeout), sum, nil
}

// streamFile streams the file at path through a Stream with opt. Its
// Summary is the file's, with Fallback set if the stream could not give
// Check's result; the stream stops at an event out of order beyond its
// window, but the file is read to the end.
func streamFile(path string, opt *Options) (Result, Summary, error) {
	f, err := OpenHistory(path)
	if err != nil {
		return Result{}, Summary{}, err
	}
	defer f.Close()
	var sum Summary
	var grant Event
	var last int64
	s := NewStream(opt)
	err = ScanJSONL(f, func(e Event) error {
		if sum.Events == 0 || e.Time > last {
			last = e.Time
		}
		sum.Lateness = max(sum.Lateness, time.Duration(last-e.Time))
		sum.Events++
		if e.F == FAcquire && e.Type == OK && (sum.Grant == nil || e.Time >= grant.Time) {
			grant, sum.Grant = e, &grant
		}
		s.Add(e) // after an error, the stream takes no more; the file is read on
		return nil
	})
	if err != nil {
		return Result{}, Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	res, cerr := s.Close()
	sum.Reorder, sum.Fallback = s.opt.Reorder, cerr
	return res, sum, nil
}

// historyPath returns path, or the history.jsonl (else history.jsonl.gz)
// of the run folder path.
func historyPath(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return path, nil
	}
	for _, name := range []string{HistoryFile, HistoryFileGz} {
		p := filepath.Join(path, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", path, ErrNoHistory)
}
