package scenarios

import "errors"

var (
	// ErrUnknownScenario means no built-in scenario has that name.
	ErrUnknownScenario = errors.New("scenarios: unknown scenario")
	// ErrBadScenario means a scenario's definition is invalid.
	ErrBadScenario = errors.New("scenarios: bad scenario")
)
