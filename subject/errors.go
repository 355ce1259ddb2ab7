package subject

import "errors"

var (
	// ErrUnusable means the lock under test never worked at all: a
	// lock program that exited, or never answered a request, from the start.
	ErrUnusable = errors.New("subject: the lock under test never answered")
	// ErrSilent means the lock under test was up (it answered its
	// warm-up) but answered none of a trial's requests: the runner judges
	// the silence by the faults that were on the trial.
	ErrSilent = errors.New("subject: the lock under test answered none of the trial's requests")
)
