package scenario

import "errors"

var (
	// ErrUnknownScenario means no built-in scenario has that name.
	ErrUnknownScenario = errors.New("scenario: unknown scenario")
	// ErrBadScenario means a scenario's definition is invalid.
	ErrBadScenario = errors.New("scenario: bad scenario")
)
