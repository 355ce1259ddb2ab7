package evidence

// The observations of a trial, and of a run: the words verdict.json uses.
// Package judge decides which one a trial and a run get; a scenario
// expects one of the first four, and Inconclusive never matches.
const (
	Safe         = "safe"         // conclusive, and no anomaly
	Unsafe       = "unsafe"       // an anomaly that breaks mutual exclusion
	Stuck        = "stuck"        // a stuck-lock, and no safety anomaly
	Starves      = "starves"      // a starvation (or livelock), and no safety anomaly or stuck-lock
	Inconclusive = "inconclusive" // the trial proves nothing: see its reasons
)

// Conclusive is the expectation of a run that judges nothing but proof: any
// conclusive observation meets it (a run of the user's own lock).
const Conclusive = "conclusive"
