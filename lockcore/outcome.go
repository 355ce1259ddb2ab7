package lockcore

import (
	"context"
	"errors"
	"net"
	"slices"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// MayHaveRun reports whether a failed call to Redis may still have been
// applied, so a history must record its outcome as unknown rather than as a
// failure. It is the one rule lockcore and the adapters of other lock
// libraries use; [NewOpError] records its answer in [OpError.Indeterminate].
//
//   - nil: false.
//   - A lockcore answer anywhere in err ([ErrNotAcquired], [ErrNotHeld],
//     [ErrReleased], [ErrExpired], [ErrNotReplicated]): false, whatever else
//     err wraps. The lock has decided that the caller holds nothing
//     afterwards, and that is the outcome a history records, even where a
//     node may have applied part of the request: an acquire cut short by
//     ctx, one undone for want of replicas, a release that reached only a
//     minority. [ErrExpired] is such an answer too: it is returned when the
//     lease's deadline passed before the call could confirm it (or before
//     it was sent), and the lease is then given up. A late extend that a
//     node did apply only keeps the key, and so other clients, out longer.
//
// Otherwise err is read from the outside in, and the first rule that
// matches an error in its chain decides:
//
//   - an *[OpError]: its Indeterminate, the verdict of whoever built it;
//   - context.Canceled or context.DeadlineExceeded: true, the request may
//     already be on the wire;
//   - an error reply from Redis (a [redis.Error], redis.Nil included):
//     false, the server answered;
//   - a failed dial (a *net.OpError with Op "dial"), ECONNREFUSED,
//     [redis.ErrPoolTimeout] or [redis.ErrClosed]: false, nothing was
//     written;
//   - an error joining several (errors.Join, or fmt.Errorf with more than
//     one %w): true if any of them may have run;
//   - anything else, such as a read timeout, EOF or a connection reset
//     after the request was written: true.
//
// A client that retries (go-redis's MaxRetries) reports only its last
// attempt, so the locks under test should run with retries off.
func MayHaveRun(err error) bool {
	if err == nil || slices.ContainsFunc(answers, func(a error) bool { return errors.Is(err, a) }) {
		return false
	}
	return mayHaveRun(err)
}

// NewOpError wraps err, the failure of op on key, as an *[OpError] whose
// Indeterminate is [MayHaveRun](err). err must not be nil.
func NewOpError(op, key string, err error) *OpError {
	return &OpError{Op: op, Key: key, Indeterminate: MayHaveRun(err), Err: err}
}

// answers are lockcore's definite outcomes.
var answers = []error{ErrNotAcquired, ErrNotHeld, ErrReleased, ErrExpired, ErrNotReplicated}

// mayHaveRun applies MayHaveRun's rules after the answers to err, then to
// what it wraps.
func mayHaveRun(err error) bool {
	switch e := err.(type) {
	case *OpError:
		return e.Indeterminate
	case redis.Error:
		return false
	case *net.OpError:
		if e.Op == "dial" {
			return false
		}
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), mayHaveRun)
	}
	switch {
	case is(err, context.Canceled), is(err, context.DeadlineExceeded):
		return true
	case is(err, syscall.ECONNREFUSED), is(err, redis.ErrPoolTimeout), is(err, redis.ErrClosed):
		return false
	}
	if next := errors.Unwrap(err); next != nil {
		return mayHaveRun(next)
	}
	return true
}

// is is errors.Is for err alone, not its chain.
func is(err, target error) bool {
	if err == target {
		return true
	}
	x, ok := err.(interface{ Is(error) bool })
	return ok && x.Is(target)
}
