package checker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A Summary tells what [CheckFile] read besides the result.
type Summary struct {
	// Events is the number of events in the file.
	Events int
	// Grant is the ok acquire with the latest time (the last of equal
	// times), or nil if the lock was never granted.
	Grant *Event
	// Fallback is nil if the file was checked as a stream, else why it
	// was read whole and checked by [CheckTimeout] (it wraps
	// [ErrTimeOrder] or [ErrNeedHistory]).
	Fallback error
	_        struct{} // disallow positional literals, for extensibility
}

// CheckFile checks the history at path (a JSON Lines file, gzipped or not,
// or a run folder holding history.jsonl or history.jsonl.gz) and returns what CheckTimeout(ReadFile(path), opt,
// timeout) returns, streaming it through a [Stream] in flat memory. When
// the stream cannot give that result (events out of time order, a lost
// update to explain, see [ErrNeedHistory]), it reads the file whole and
// calls CheckTimeout. Errors are those of ReadFile.
//
// The stream runs no search, so timeout only bounds the searches of a file
// checked whole; a streamed check never ends Unknown.
func CheckFile(path string, opt *Options, timeout time.Duration) (Result, Summary, error) {
	path, err := historyPath(path)
	if err != nil {
		return Result{}, Summary{}, err
	}
	f, err := OpenHistory(path)
	if err != nil {
		return Result{}, Summary{}, err
	}
	defer f.Close()
	var sum Summary
	var grant Event
	s := NewStream(opt)
	err = ScanJSONL(f, func(e Event) error {
		sum.Events++
		if e.F == FAcquire && e.Type == OK && (sum.Grant == nil || e.Time >= grant.Time) {
			grant, sum.Grant = e, &grant
		}
		return s.Add(e)
	})
	res, cerr := s.Close()
	switch {
	case err != nil && !errors.Is(err, ErrTimeOrder):
		return Result{}, Summary{}, fmt.Errorf("%s: %w", path, err)
	case err != nil:
		sum.Fallback = err
	case cerr != nil:
		sum.Fallback = cerr
	default:
		return res, sum, nil
	}
	h, err := ReadFile(path)
	if err != nil {
		return Result{}, Summary{}, err
	}
	sum.Events, sum.Grant = len(h), nil
	for i := range h {
		if h[i].F == FAcquire && h[i].Type == OK && (sum.Grant == nil || h[i].Time >= sum.Grant.Time) {
			g := h[i]
			sum.Grant = &g
		}
	}
	return CheckTimeout(h, opt, timeout), sum, nil
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
