// Package judge decides every verdict lockpick gives, in one place: what a
// trial observed (safe, unsafe, stuck, starves or inconclusive) from its
// check result and its evidence, what a run observed from its trials,
// whether that meets the scenario's expectation, the counts a verdict
// carries, and how a run of a user's own lock compares with its baseline.
//
// Everything that prints, renders or gates a verdict (run, soak, compare,
// matrix, merge, check, report, the baseline gate) calls it and computes
// none of it itself, so no two of them can disagree.
//
// The rules, in order:
//
//   - A trial whose evidence is not conclusive is Inconclusive, whatever
//     its history shows: its anomalies are counted and shown, but prove
//     nothing about the attack.
//   - Otherwise an anomaly that breaks mutual exclusion (double-grant,
//     shared-token, stale-write, lost-update) makes it Unsafe; a
//     linearizability search that timed out, with none of those found,
//     Inconclusive; a stuck-lock Stuck; a starvation Starves; else Safe.
//     Kinds the scenario tolerates are left out of all of this.
//   - A run is Inconclusive if any trial is, else the worst of its trials.
//   - Inconclusive matches no expectation; [Conclusive] matches any other.
//   - A baseline records only what was proven: see [Baseline].
//
// The package imports only the checker, evidence and results packages, so
// a tool that records its own histories can judge them as lockpick does.
package judge
