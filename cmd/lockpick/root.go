package main

import (
	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/results"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "lockpick",
		Short: "Break distributed locks built on Redis, and prove it with a checked history",
		Long: `lockpick runs real Redis lock implementations against real redis-server nodes,
injects the faults known to break them (failover, crash and restart, pauses,
clock jumps, partitions, lost replies), records every operation and checks the
history for double grants, stale writes, lost updates and stuck locks.

Exit codes: 0 every verdict matched its expectation (check: no anomaly),
1 a verdict did not match (check: an anomaly), 2 bad usage or scenario,
3 the infrastructure failed (a node did not start): never a verdict.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       results.Version(),
	}
	root.SetVersionTemplate("lockpick {{.Version}}\nbuild {{lockpickBuild}} (the executable's sha256, as recorded in shard.json)\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(err.Error() + " (see `" + c.CommandPath() + " --help`)")
	})
	root.AddCommand(newListCmd(), newRunCmd(), newCompareCmd(), newCheckCmd(), newReportCmd(), newServeCmd(), newBenchCmd(), newExploreCmd(), newMergeCmd(), newImageCmd(), newMatrixCmd())
	return root
}

// The build hash reads the whole executable: the version template asks for
// it only when --version is given, never on the way to another command.
// cobra's template functions are one global map, so it is added once, not
// per root command (tests build many at once).
func init() { cobra.AddTemplateFunc("lockpickBuild", results.Build) }
