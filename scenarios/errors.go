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
	// ErrSubjectSilent means the lock under test was up (it answered its
	// warm-up) but answered none of a trial's requests: the runner judges
	// the silence by the faults that were on the trial.
	ErrSubjectSilent = errors.New("scenarios: the lock under test answered none of the trial's requests")
)

// An InfraError is a failure of the harness, not of the lock: a node that did
// not start, a port that was taken. It is never reported as a verdict.
type InfraError struct {
	Err error
}

func (e *InfraError) Error() string { return "infrastructure: " + e.Err.Error() }

func (e *InfraError) Unwrap() error { return e.Err }
