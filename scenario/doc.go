// Package scenario is lockpick's scenario language: what one attack on a
// Redis lock is, as data, and the built-in catalogue of them.
//
// A [Scenario] names a [Topology], a [Lock], the clients that contend for it
// and a schedule of fault [Step]s (at a time, or at a [When]: a client's
// acquire, grant, read or release), with the verdict it should produce
// ([Expect]) and named variants ([Arm]). [Parse] and [LoadFile] read one from
// YAML and report problems as a [FileError] with the file and line;
// [Scenario.Validate] checks one against the faults, targets and lock kinds
// ([LockKinds]) lockpick knows. [Lookup], [Suite] and [All] return the
// embedded catalogue (catalogue/*.yaml), and [Scenario.WithSubject] retargets
// a scenario at another lock.
//
// The package only describes attacks; package trial plays them.
package scenario
