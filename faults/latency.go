package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/cluster"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// A LatencyFault delays traffic through a node's link by Latency ± Jitter,
// per direction: with Direction Both a round trip takes 2×Latency longer.
// Toxiproxy works in whole milliseconds, so both round up to one.
type LatencyFault struct {
	// Latency is the delay added to each chunk of traffic.
	Latency time.Duration `json:"latency"`
	// Jitter is the most the delay varies either way. default: 0.
	Jitter time.Duration `json:"jitter"`
	// Direction is the traffic delayed. default: Both.
	Direction Direction `json:"direction"`
	// Link is "client" or "repl". default: "client".
	Link string `json:"link"`
}

var (
	_ Fault    = (*LatencyFault)(nil)
	_ Verifier = (*LatencyFault)(nil)
)

const latencyToxic = "lockpick-latency"

// Inject starts delaying. It returns [cluster.ErrBadFault] for a negative latency
// or jitter and [cluster.ErrNoLink] for a link the node lacks.
func (f *LatencyFault) Inject(ctx context.Context, n *cluster.Node) error {
	streams, err := f.Direction.streams()
	if err != nil {
		return err
	}
	if f.Latency < 0 || f.Jitter < 0 {
		return fmt.Errorf("%w: negative latency %v or jitter %v", cluster.ErrBadFault, f.Latency, f.Jitter)
	}
	l, err := linkOf(n, f.Link)
	if err != nil {
		return err
	}
	return addToxics(ctx, l, latencyToxic, "latency", streams, map[string]any{
		"latency": ceilMillis(f.Latency), "jitter": ceilMillis(f.Jitter),
	})
}

// Heal removes the delay; traffic already delayed is still delivered.
func (f *LatencyFault) Heal(ctx context.Context, n *cluster.Node) error {
	l, err := linkOf(n, f.Link)
	if err != nil {
		return err
	}
	return removeToxics(ctx, l, latencyToxic)
}

// Verify returns e.g. "toxic latency 1500ms to-node installed" if the link
// has the latency toxics of Direction with this fault's latency and jitter,
// read back from the toxics, and an error wrapping [ErrNoEffect] otherwise
// (another latency fault's toxic on the link included).
func (f *LatencyFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	streams, err := f.Direction.streams()
	if err != nil {
		return "", err
	}
	l, err := linkOf(n, f.Link)
	if err != nil {
		return "", err
	}
	ts, err := checkToxics(ctx, l, latencyToxic, "latency", streams)
	if err != nil {
		return "", err
	}
	var lat, jitter int64
	for _, t := range ts {
		lt, ok := t.Toxic.(*toxics.LatencyToxic)
		if !ok {
			return "", noEffect("toxic %s on %s is a %T", t.Name, l.Name(), t.Toxic)
		}
		if lt.Latency != ceilMillis(f.Latency) || lt.Jitter != ceilMillis(f.Jitter) {
			return "", noEffect("toxic %s on %s adds %dms±%dms, want %dms±%dms",
				t.Name, l.Name(), lt.Latency, lt.Jitter, ceilMillis(f.Latency), ceilMillis(f.Jitter))
		}
		lat, jitter = lt.Latency, lt.Jitter
	}
	s := fmt.Sprintf("toxic latency %dms", lat)
	if jitter > 0 {
		s += fmt.Sprintf("±%dms", jitter)
	}
	return s + " " + f.Direction.String() + " installed" + onLink(f.Link), nil
}

// Describe returns e.g. "latency 200ms±50ms both".
func (f *LatencyFault) Describe() string {
	s := "latency " + f.Latency.String()
	if f.Jitter > 0 {
		s += "±" + f.Jitter.String()
	}
	return s + " " + f.Direction.String()
}

func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

func init() { RegisterFault("latency", func() Fault { return new(LatencyFault) }) }

// Place checks the link it acts on (see [Placer]).
func (f *LatencyFault) Place(t cluster.Topology, node string) error {
	return placeLink(t, node, f.Link)
}
