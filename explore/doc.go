// Package explore searches for fault schedules nobody scripted that break a
// lock, and shrinks what it finds to a scenario a person can read.
//
// [Explore] starts from a base scenario and plays trials with random
// schedules drawn by a [Generator] from a vocabulary of fault kinds
// ([Kinds], or the scenario's explore: section), at most
// [DefaultMaxFaults] faults each, until a trial is unsafe (stuck and
// starving trials are counted, not findings) or the budget runs out
// ([ErrFoundNothing]). A [Finding] is then
// replayed to measure how often it reproduces ([Measure]), and [Shrink]
// removes and shortens its faults while the failure still reproduces often
// enough, replay after replay, keeping each [ShrinkStep]. The [Result]
// holds the search's [Tried] schedules, the finding and the shrunk
// scenario, which [WriteScenario] saves as minimal.yaml, ready for
// `lockpick run --file`.
//
// A replay is a whole trial, run through a [Replay] function (the CLI's
// uses package trial), so what is found is judged by the same checker and
// evidence rules as any run: an inconclusive trial is never a finding.
// docs/explore.md has the search, the shrink and the report.
package explore
