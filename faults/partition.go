package faults

import (
	"context"
	"fmt"
	"sync"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/netlink"
)

// A PartitionFault cuts a node off from its clients (and sentinels), or a
// replica from its master with Link "repl". By default packets are
// black-holed: connections stay open, requests and/or replies vanish, and
// clients see timeouts, as across a real partition. With Refuse the proxy
// instead closes every connection and refuses new ones, which clients see
// at once. When a black hole heals, the connections that lived through it
// are closed (toxiproxy's cleanup), and clients reconnect.
type PartitionFault struct {
	// Direction is the traffic that vanishes. default: Both.
	Direction Direction `json:"direction"`
	// Link is "client" or "repl". default: "client".
	Link string `json:"link"`
	// Refuse closes connections and refuses new ones instead of black-holing;
	// it only goes with Direction Both.
	Refuse bool `json:"refuse"`

	mu  sync.Mutex
	hit *netlink.Link // the link Inject acted on (a replication link may move), until Heal
}

var (
	_ Fault    = (*PartitionFault)(nil)
	_ Verifier = (*PartitionFault)(nil)
)

const partitionToxic = "lockpick-partition"

// Inject starts the partition. It returns [cluster.ErrNoLink] for a link the node
// lacks and [cluster.ErrBadFault] for Refuse with one direction.
func (f *PartitionFault) Inject(ctx context.Context, n *cluster.Node) error {
	l, streams, err := f.target(n)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.hit = l
	f.mu.Unlock()
	if f.Refuse {
		return l.CutBy("partition")
	}
	return addToxics(ctx, l, partitionToxic, "timeout", streams, map[string]any{"timeout": 0})
}

// Heal ends the partition.
func (f *PartitionFault) Heal(ctx context.Context, n *cluster.Node) error {
	l, _, err := f.target(n)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.hit = nil
	f.mu.Unlock()
	if f.Refuse {
		return l.RestoreBy("partition")
	}
	return removeToxics(ctx, l, partitionToxic)
}

// Verify returns e.g. "client link black-holed both ways" if the link has
// the partition's timeout toxics on every stream of Direction, or "client
// link cut, refusing connections" if Refuse and the link is cut. Otherwise
// it returns an error wrapping [ErrNoEffect].
func (f *PartitionFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	l, streams, err := f.target(n)
	if err != nil {
		return "", err
	}
	link := orClient(f.Link)
	if f.Refuse {
		if !l.IsCut() {
			return "", noEffect("%s link %s is open", link, l.Name())
		}
		return link + " link cut, refusing connections", nil
	}
	if _, err := checkToxics(ctx, l, partitionToxic, "timeout", streams); err != nil {
		return "", err
	}
	if len(streams) == 2 {
		return link + " link black-holed both ways", nil
	}
	return link + " link black-holed " + f.Direction.String(), nil
}

func (f *PartitionFault) target(n *cluster.Node) (*netlink.Link, []string, error) {
	streams, err := f.Direction.streams()
	if err != nil {
		return nil, nil, err
	}
	if f.Refuse && len(streams) != 2 {
		return nil, nil, fmt.Errorf("%w: refuse needs direction both", cluster.ErrBadFault)
	}
	f.mu.Lock()
	l := f.hit
	f.mu.Unlock()
	if l != nil {
		return l, streams, nil
	}
	l, err = linkOf(n, f.Link)
	return l, streams, err
}

// Describe returns e.g. "partition client both" or "partition repl refuse".
func (f *PartitionFault) Describe() string {
	s := "partition " + orClient(f.Link)
	if f.Refuse {
		return s + " refuse"
	}
	return s + " " + f.Direction.String()
}

func init() { RegisterFault("partition", func() Fault { return new(PartitionFault) }) }

// Place checks the link it acts on (see [Placer]).
func (f *PartitionFault) Place(t cluster.Topology, node string) error {
	return placeLink(t, node, f.Link)
}
