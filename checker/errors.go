package checker

import (
	"errors"
	"fmt"
)

var (
	// ErrMissingIndex is returned for an event without an index.
	ErrMissingIndex = errors.New("checker: missing index")
	// ErrMissingTime is returned for an event without a time.
	ErrMissingTime = errors.New("checker: missing time")
	// ErrMissingProcess is returned for an event without a process.
	ErrMissingProcess = errors.New("checker: missing process")
	// ErrBadType is returned for an event whose type is not invoke, ok,
	// fail or info.
	ErrBadType = errors.New("checker: bad type")
	// ErrBadF is returned for an event whose f is not acquire, release,
	// extend, read, write or nemesis.
	ErrBadF = errors.New("checker: bad f")
	// ErrNoHistory is returned by [ReadFile] for a run folder without a
	// history.jsonl file.
	ErrNoHistory = errors.New("checker: no history.jsonl in folder")
)

// A ParseError reports a malformed line of a JSON Lines history. Line counts
// from 1. Err is a JSON syntax error or one of the sentinel errors above.
type ParseError struct {
	Line int
	Err  error
}

// Error returns the message, for example "line 3: checker: bad type \"done\"".
func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns e.Err, so errors.Is(err, ErrBadType) works.
func (e *ParseError) Unwrap() error { return e.Err }
