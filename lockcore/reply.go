package lockcore

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// errUnexpectedReply is the error of a script reply of the wrong shape.
var errUnexpectedReply = errors.New("unexpected script reply")

// millis converts a PTTL-style count of milliseconds to a duration, clamped
// to [0, math.MaxInt64] so that no reply can overflow into a negative wait.
// Negative counts (-1: no expiry, -2: no key) return 0.
func millis(n int64) time.Duration {
	switch {
	case n <= 0:
		return 0
	case n > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(n) * time.Millisecond
}

// parseAcquireReply reads the reply of the reentrant acquire script: nil
// (redis.Nil) when the lock was taken or re-entered, else the key's PTTL in
// milliseconds. It returns acquired, the time until the key expires (0 when
// the reply says it never does or is already gone), and the call's error.
func parseAcquireReply(v any, err error) (acquired bool, ttl time.Duration, _ error) {
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, 0, fmt.Errorf("%w: %T %v", errUnexpectedReply, v, v)
	}
	return false, millis(n), nil
}

// parseFencedAcquireReply reads the fenced reentrant acquire script's reply:
// {token} when acquired, the holder's PTTL otherwise.
func parseFencedAcquireReply(v any, err error) (acquired bool, ttl time.Duration, fence int64, _ error) {
	if err != nil {
		return false, 0, 0, err
	}
	switch r := v.(type) {
	case []any:
		if len(r) == 1 {
			if f, ok := r[0].(int64); ok && f >= 0 {
				return true, 0, f, nil
			}
		}
	case int64:
		return false, millis(r), 0, nil
	}
	return false, 0, 0, fmt.Errorf("%w: %T %v", errUnexpectedReply, v, v)
}

// A releaseOutcome is what the reentrant release script reported.
type releaseOutcome int

const (
	releaseNotHeld releaseOutcome = iota // nil: our field was not there
	releaseHeld                          // 0: the count dropped but is still above zero
	releaseDone                          // 1: the key was deleted and the release published
)

// parseReleaseReply reads the reply of the reentrant release script.
func parseReleaseReply(v any, err error) (releaseOutcome, error) {
	if errors.Is(err, redis.Nil) {
		return releaseNotHeld, nil
	}
	if err != nil {
		return 0, err
	}
	switch v {
	case int64(0):
		return releaseHeld, nil
	case int64(1):
		return releaseDone, nil
	}
	return 0, fmt.Errorf("%w: %T %v", errUnexpectedReply, v, v)
}
