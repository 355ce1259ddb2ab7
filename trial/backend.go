package trial

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/scenario"
)

// A BackendFactory makes the backend of one trial, keeping node files under
// dir, with the shims the scenario's faults need.
type BackendFactory func(dir string, needs Needs) (cluster.Backend, error)

// Needs says which shims a trial's nodes must run under.
type Needs struct {
	// Clock is true when a fault moves a node's clock (the clock shim).
	Clock bool
	// PowerLoss is true when a fault cuts a node's power (lazy disks).
	PowerLoss bool
}

// ProcessBackend is the default [BackendFactory]: real processes on this host.
func ProcessBackend(dir string, needs Needs) (cluster.Backend, error) {
	b, err := cluster.NewProcessBackend(dir)
	if err != nil {
		return nil, err
	}
	if needs.Clock {
		if b.ClockShim, err = cluster.BuildClockShim(ShimCache()); err != nil {
			return nil, err
		}
	}
	b.LazyDisks = needs.PowerLoss
	return b, nil
}

// ShimCache is where the shims are built once and reused.
func ShimCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "lockpick")
	}
	return filepath.Join(os.TempDir(), "lockpick-cache")
}

// needsOf returns what the steps of s (in any arm) need: the clock shim
// for a clock-* fault, lazy disks for power-loss.
func needsOf(s scenario.Scenario) Needs {
	all := s.FaultText()
	return Needs{Clock: strings.Contains(all, "clock-"), PowerLoss: strings.Contains(all, "power-loss")}
}
