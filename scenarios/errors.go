package scenarios

import "errors"

var (
	// ErrUnknownScenario means no built-in scenario has that name.
	ErrUnknownScenario = errors.New("scenarios: unknown scenario")
	// ErrBadScenario means a scenario's definition is invalid.
	ErrBadScenario = errors.New("scenarios: bad scenario")
	// ErrSubjectUnusable means the lock under test never worked at all: a
	// lock program that exited, or never answered a request, from the start.
	ErrSubjectUnusable = errors.New("scenarios: the lock under test never answered")
)

// An InfraError is a failure of the harness, not of the lock: a node that did
// not start, a port that was taken. It is never reported as a verdict.
type InfraError struct {
	Err error
}

func (e *InfraError) Error() string { return "infrastructure: " + e.Err.Error() }

func (e *InfraError) Unwrap() error { return e.Err }
