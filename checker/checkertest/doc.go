// Package checkertest generates lockpick histories for tests and benchmarks:
// simulated trials of processes taking Redis-style locks and updating the
// counters they protect, with optional faults, reproducible from a seed.
//
// The generated histories are what a recorder would write: sorted by time,
// with Index equal to the position. Without faults they are correct, so
// [checker.Check] must find no anomaly in them.
package checkertest
