// Package scenarios holds lockpick's catalogue of attacks on Redis locks and
// the runner that plays them.
//
// A [Scenario] is data: a topology, a lock, a number of clients, how long each
// holds the lock, a fault schedule and the verdict it expects. A trial starts
// the topology, runs the clients and the nemesis side by side while a
// [checker.Recorder] writes every operation down, stops everything, and hands
// the history to the checker. Nothing in a verdict comes from the scenario
// itself: an "unsafe" expectation is met only by an anomaly in the history.
//
// Each trial draws its fault timing from a *rand.Rand seeded with the trial's
// seed, so a trial is replayed by running it again with that seed.
package scenarios
