// Package model holds the porcupine models that package checker runs on the
// operations it derives from a history, and the search of its partitions.
//
// One model, [New], serves every partition: the input type says which kind
// of partition an operation belongs to, and nil is the initial state of
// both. A [LeaseInput] grants or ends a lease window on a mutex whose state
// is its holder; a [CounterInput] reads or writes a counter whose writes are
// legal only as increments. Both kinds keep a small, comparable state, so
// porcupine's cache of visited states stays cheap. Each operation carries a
// [Meta] naming its partition, process and history indexes, so one model
// can check one partition or a whole history partitioned for visualization.
//
// [Search] checks a list of [Part] values in parallel under one deadline,
// leaving porcupine.Unknown on any it could not finish. What the partitions
// hold, and what an illegal one means, is checker's business: see its
// package comment.
//
// The counter rule decides what the counter model's search decides without
// a search, for a history that arrives in time order: a [Place] orders a
// counter's operations, a [MaxBefore] remembers the latest place completed
// before a time, and [FirstGap] finds the first value of a range that two
// [ValueSet]s both miss: one that no write supplied. counterrule.go explains
// why the rule is exact.
//
// The package imports only the standard library and porcupine.
package model
