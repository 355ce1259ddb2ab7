package faults

import (
	"context"

	"github.com/lockpick/lockpick/cluster"
)

// A DropRepliesFault lets requests reach the node and throws its replies
// away: a SET is applied, but the client never learns it and times out.
// Lost replies are what make an acquire's outcome unknown.
type DropRepliesFault struct {
	// Link is "client" or "repl". default: "client".
	Link string `json:"link"`
}

var (
	_ Fault    = (*DropRepliesFault)(nil)
	_ Verifier = (*DropRepliesFault)(nil)
)

const dropRepliesToxic = "lockpick-drop-replies"

// Inject starts dropping replies. It returns [cluster.ErrNoLink] for a link the
// node lacks.
func (f *DropRepliesFault) Inject(ctx context.Context, n *cluster.Node) error {
	l, err := linkOf(n, f.Link)
	if err != nil {
		return err
	}
	return addToxics(ctx, l, dropRepliesToxic, "timeout", []string{"downstream"}, map[string]any{"timeout": 0})
}

// Heal lets replies through again; connections that lost replies are closed.
func (f *DropRepliesFault) Heal(ctx context.Context, n *cluster.Node) error {
	l, err := linkOf(n, f.Link)
	if err != nil {
		return err
	}
	return removeToxics(ctx, l, dropRepliesToxic)
}

// Verify returns "toxic timeout from-node installed, replies dropped" if
// the link has the toxic, and an error wrapping [ErrNoEffect] otherwise.
func (f *DropRepliesFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	l, err := linkOf(n, f.Link)
	if err != nil {
		return "", err
	}
	if _, err := checkToxics(ctx, l, dropRepliesToxic, "timeout", []string{"downstream"}); err != nil {
		return "", err
	}
	return "toxic timeout from-node installed, replies dropped" + onLink(f.Link), nil
}

// Describe returns "drop replies".
func (f *DropRepliesFault) Describe() string { return "drop replies " + orClient(f.Link) }

func init() { RegisterFault("drop-replies", func() Fault { return new(DropRepliesFault) }) }

// Place checks the link it acts on (see [Placer]).
func (f *DropRepliesFault) Place(t cluster.Topology, node string) error {
	return placeLink(t, node, f.Link)
}
