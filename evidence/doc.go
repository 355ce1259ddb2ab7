// Package evidence decides whether a trial proves anything. A verdict of
// safe means nothing unless the history shows that the lock was exercised
// and that the attack met it: grants were made, every scheduled fault fired
// and had its effect, the scenario's own requirements (a fenced write was
// refused, a WAIT refused a lock, a restarted node came back without the
// key) hold, and the history is complete. [Evaluate] checks all of that
// and returns an [Evidence]; [Observe] turns a check result and its
// evidence into the trial's observation, which is inconclusive whenever the
// evidence is missing. Inconclusive never matches an expectation.
//
// The package imports only the checker, so a tool that records its own
// histories can use it as lockpick does.
package evidence
