// Package results stores runs: one folder per scenario run under
// results/runs/, holding the scenario, every trial's history and node logs,
// and the verdict. A folder is assembled under a ".partial" name and renamed
// into place only when complete, so an interrupted run never leaves a
// half-written result that looks finished.
package results
