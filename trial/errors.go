package trial

// An InfraError is a failure of the harness, not of the lock: a node that did
// not start, a port that was taken. It is never reported as a verdict.
type InfraError struct {
	Err error
}

func (e *InfraError) Error() string { return "infrastructure: " + e.Err.Error() }

func (e *InfraError) Unwrap() error { return e.Err }
