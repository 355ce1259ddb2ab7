package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/dockerbackend"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// backendFactory returns the trial backend named by --backend.
func backendFactory(name, image string) (trial.BackendFactory, error) {
	switch name {
	case "", "process":
		if image != "" {
			return nil, fmt.Errorf("--image needs --backend docker")
		}
		return trial.ProcessBackend, nil
	case "docker":
		return dockerBackend(image), nil
	}
	return nil, fmt.Errorf("unknown backend %q (process or docker)", name)
}

// dockerBackend returns a factory of docker backends running image, or an
// image built from this host's redis-server when image is "". Scenarios
// that move a clock get the clock shim, copied into the built image or
// bind-mounted into image.
func dockerBackend(image string) trial.BackendFactory {
	return func(dir string, needs trial.Needs) (cluster.Backend, error) {
		b, err := dockerbackend.New(dir)
		if err != nil {
			return nil, err
		}
		b.Image = image
		b.LazyDisks = needs.PowerLoss
		if needs.Clock {
			if b.ClockShim, err = cluster.BuildClockShim(trial.ShimCache()); err != nil {
				if errors.Is(err, cluster.ErrNoCompiler) && image != "" {
					return nil, fmt.Errorf("%w: the clock shim cannot be built for --image %s", err, image)
				}
				return nil, err
			}
		}
		return b, nil
	}
}

// backendFits returns why the backend named by --backend cannot run a
// scenario of list (PostgreSQL nodes run on the process backend only, and
// only there do ZooKeeper members run under the clock shim), or nil.
func backendFits(name string, list ...scenario.Scenario) error {
	if name != "docker" {
		return nil
	}
	for _, s := range list {
		if s.Topology.Postgres > 0 {
			return fmt.Errorf("--backend docker runs no PostgreSQL nodes (%s: process backend only, see docs/postgres.md)", s.Name)
		}
		if s.Topology.ZooKeeper > 0 && strings.Contains(s.FaultText(), "clock-") {
			return fmt.Errorf("--backend docker does not move a ZooKeeper member's clock (%s: process backend only, which preloads the clock shim into the members' JVMs; see docs/backends.md)", s.Name)
		}
	}
	return nil
}
