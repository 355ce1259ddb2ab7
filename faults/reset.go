package faults

import (
	"context"

	"github.com/lockpick/lockpick/cluster"
)

// A ResetFault closes every connection through a node's link at once, and
// until healed resets each new connection (TCP RST) as soon as the client
// sends anything, so no request gets through.
type ResetFault struct {
	// Link is "client" or "repl". default: "client".
	Link string `json:"link"`
}

var (
	_ Fault    = (*ResetFault)(nil)
	_ Verifier = (*ResetFault)(nil)
)

const resetToxic = "lockpick-reset"

// Inject drops the established connections and starts resetting new ones.
// It returns [cluster.ErrNoLink] for a link the node lacks.
func (f *ResetFault) Inject(ctx context.Context, n *cluster.Node) error {
	l, err := linkOf(n, f.Link)
	if err != nil {
		return err
	}
	if err := addToxics(ctx, l, resetToxic, "reset_peer", []string{"upstream"}, map[string]any{"timeout": 0}); err != nil {
		return err
	}
	return l.DropConnections()
}

// Heal stops resetting connections.
func (f *ResetFault) Heal(ctx context.Context, n *cluster.Node) error {
	l, err := linkOf(n, f.Link)
	if err != nil {
		return err
	}
	return removeToxics(ctx, l, resetToxic)
}

// Verify returns "toxic reset_peer to-node installed" if the link has the
// toxic, and an error wrapping [ErrNoEffect] otherwise.
func (f *ResetFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	l, err := linkOf(n, f.Link)
	if err != nil {
		return "", err
	}
	if _, err := checkToxics(ctx, l, resetToxic, "reset_peer", []string{"upstream"}); err != nil {
		return "", err
	}
	return "toxic reset_peer to-node installed" + onLink(f.Link), nil
}

// Describe returns "reset connections".
func (f *ResetFault) Describe() string { return "reset connections " + orClient(f.Link) }

func init() { RegisterFault("reset", func() Fault { return new(ResetFault) }) }

// Place checks the link it acts on (see [Placer]).
func (f *ResetFault) Place(t cluster.Topology, node string) error { return placeLink(t, node, f.Link) }
