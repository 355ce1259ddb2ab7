package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/results"
)

// shardFlags are the flags that run one shard of the work.
type shardFlags struct {
	shard  string
	shards int
}

func addShardFlags(cmd *cobra.Command, f *shardFlags, what string) {
	cmd.Flags().StringVar(&f.shard, "shard", "", "run only shard `i/n` of the "+what+" (default $LOCKPICK_SHARD)")
	cmd.Flags().IntVar(&f.shards, "shards", 0, "the number of shards, when $JOB_COMPLETION_INDEX (0-based, as a Kubernetes Indexed Job sets it) picks the shard")
}

// resolve returns the shard to run: --shard, else $LOCKPICK_SHARD, else
// $JOB_COMPLETION_INDEX+1 of --shards; the whole work when none is set.
func (f shardFlags) resolve() (results.Shard, error) {
	var sh results.Shard
	var err error
	switch {
	case f.shard != "":
		sh, err = results.ParseShard(f.shard)
	case os.Getenv("LOCKPICK_SHARD") != "":
		sh, err = results.ParseShard(os.Getenv("LOCKPICK_SHARD"))
		if err != nil {
			err = fmt.Errorf("$LOCKPICK_SHARD: %w", err)
		}
	case f.shards > 1:
		idx := os.Getenv("JOB_COMPLETION_INDEX")
		k, perr := strconv.Atoi(idx)
		if perr != nil {
			return sh, fmt.Errorf("--shards %d needs --shard i/%d, $LOCKPICK_SHARD or $JOB_COMPLETION_INDEX (got %q)", f.shards, f.shards, idx)
		}
		sh = results.Shard{Index: k + 1, Count: f.shards}
		if err = sh.Validate(); err != nil {
			err = fmt.Errorf("$JOB_COMPLETION_INDEX=%d with --shards %d: %w", k, f.shards, err)
		}
	case f.shards < 0:
		return sh, fmt.Errorf("--shards must be at least 1")
	}
	if err == nil && f.shards > 0 && !sh.Whole() && sh.Count != f.shards {
		err = fmt.Errorf("shard %s is not one of --shards %d", sh, f.shards)
	}
	if sh.Count == 1 {
		sh = results.Shard{} // 1/1 is the whole work
	}
	return sh, err
}
