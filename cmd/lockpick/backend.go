package main

import (
	"fmt"

	"github.com/lockpick/lockpick/scenarios"
)

// backendFactory returns the trial backend named by --backend.
func backendFactory(name, image string) (scenarios.BackendFactory, error) {
	switch name {
	case "", "process":
		if image != "" {
			return nil, fmt.Errorf("--image needs --backend docker")
		}
		return scenarios.ProcessBackend, nil
	}
	return nil, fmt.Errorf("unknown backend %q (process or docker)", name)
}
