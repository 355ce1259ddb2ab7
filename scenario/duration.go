package scenario

import (
	"fmt"
	"go.yaml.in/yaml/v3"
	"time"
)

// A Duration is a time.Duration written as text ("300ms", "8s") in scenario
// files and scenario.json.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes d as "1.5s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration such as "300ms" or "2s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("bad duration %q (want e.g. 300ms, 2s)", b)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalYAML reads a duration scalar, naming its line on error.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}
