// Package trial plays scenarios against real Redis processes and judges
// what happened.
//
// [Run] plays a [scenario.Scenario] for a number of trials ([Options]) and
// writes a run folder with the verdict, histories and report. A trial starts
// the topology through a [BackendFactory] ([ProcessBackend] by default),
// runs the clients (each a [subject.Subject], isolated ones in their own
// process: [IsWorker], [ServeWorker]) and the nemesis side by side while a
// [checker.Recorder] writes every operation down, then heals and stops
// everything and hands the history to the checker ([TrialResult]). The
// nemesis fires each step at its time or its moment, aimed at a node or
// client chosen by the system's state when the step names one. [Soak]
// plays a scenario round after round for hours, checking as it goes.
//
// Nothing in a verdict comes from the scenario itself: an "unsafe"
// expectation is met only by an anomaly in the history, and a trial whose
// faults did not meet the lock is inconclusive. Each trial draws its fault
// timing from a *rand.Rand seeded with the trial's seed, so a trial is
// replayed by running it again with that seed. Failures of the harness,
// not of the lock, are an [*InfraError], never a verdict.
package trial
