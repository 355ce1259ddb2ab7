package scenarios

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/lockpick/lockpick/cluster"
)

// A BackendFactory makes the backend of one trial, keeping node files under
// dir. clock is true when the scenario moves a node's clock, so the nodes
// must run with the clock shim.
type BackendFactory func(dir string, clock bool) (cluster.Backend, error)

// ProcessBackend is the default [BackendFactory]: real processes on this host.
func ProcessBackend(dir string, clock bool) (cluster.Backend, error) {
	b, err := cluster.NewProcessBackend(dir)
	if err != nil {
		return nil, err
	}
	if clock {
		if b.ClockShim, err = cluster.BuildClockShim(ShimCache()); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ShimCache is where the clock shim is built once and reused.
func ShimCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "lockpick")
	}
	return filepath.Join(os.TempDir(), "lockpick-cache")
}

// needsClock reports whether any step of s moves a node's clock.
func (s Scenario) needsClock() bool {
	for _, st := range s.Faults {
		if strings.HasPrefix(st.Fault, "clock-") {
			return true
		}
	}
	for _, a := range s.Arms {
		for i := 0; i+1 < len(a.overlay.Content); i += 2 {
			if a.overlay.Content[i].Value == "faults" && strings.Contains(nodeText(a.overlay.Content[i+1]), "clock-") {
				return true
			}
		}
	}
	return false
}
