package lockcore

import (
	"errors"
	"net"
	"syscall"
)

// isDialError reports whether err happened before any request was written:
// a refused or failed connect, after which the command surely did not run.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
