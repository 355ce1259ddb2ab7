package trial

import (
	"github.com/lockpick/lockpick/results"
)

// writeManifest writes the shard.json of a shard's run folder (arm is the
// compare arm it holds, "" for a run).
func writeManifest(dir *results.RunDir, scenario, arm string, o Options, trials []results.Trial) error {
	sum, err := results.FileSHA256(dir.Path("scenario.json"))
	if err != nil {
		return err
	}
	m := results.Manifest{Version: results.Version(), Build: results.Build(), Scenario: scenario, Arm: arm, ScenarioSHA256: sum,
		Seed: o.Seed, Trials: o.Trials, Shard: o.Shard}
	for _, t := range trials {
		m.Covered = append(m.Covered, t.Trial)
	}
	return dir.WriteJSON(results.ManifestFile, m)
}
