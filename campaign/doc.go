// Package campaign works across runs of package trial: it plays a
// scenario's arms side by side, puts shards of a run played on several
// machines back together, re-checks a run folder, and times a lock.
//
// [Compare] runs every arm of a scenario (or the ones named) into one
// comparison folder. [Merge] joins the shard folders of one run or
// comparison ([ShardFolders] finds them) into the folder an unsharded run
// would have written, refusing shards that do not fit ([ErrShardsDontFit])
// or whose recorded verdict its histories do not give ([ErrRecordDiffers]).
// [Rerender] checks a run folder's histories again and rewrites its report;
// [RunScenario] reads the scenario it was played with. [Bench] measures
// each subject's acquire+release throughput without faults ([BenchResult]).
package campaign
