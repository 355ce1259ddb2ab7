package faults

import "errors"

var (
	// ErrUnknownFault means [NewFault] was given a kind nobody registered.
	ErrUnknownFault = errors.New("faults: unknown fault")
	// ErrNoEffect means [Verify] looked for a fault's effect right after it
	// was injected and did not find it: a killed node still answers, a toxic
	// is not installed, TIME shows a clock that did not move.
	ErrNoEffect = errors.New("faults: fault effect not observed")
)
