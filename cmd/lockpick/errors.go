package main

import (
	"errors"
	"fmt"
)

func usageError(msg string) error { return &exitError{code: exitUsage, err: errors.New(msg)} }

func infraError(err error) error { return &exitError{code: exitInfra, err: err} }

// mismatch is returned when a verdict did not match; the report was printed already.
func mismatch(format string, a ...any) error {
	return &exitError{code: exitMismatch, err: fmt.Errorf(format, a...)}
}
