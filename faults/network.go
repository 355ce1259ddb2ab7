package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/netlink"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// A Direction says which traffic of a link a network fault affects.
type Direction string

const (
	// Both affects requests and replies. It is the default.
	Both Direction = "both"
	// ToNode affects requests only (toxiproxy's "upstream").
	ToNode Direction = "to-node"
	// FromNode affects replies only (toxiproxy's "downstream").
	FromNode Direction = "from-node"
)

// streams returns the toxiproxy streams of d, or [cluster.ErrBadFault].
func (d Direction) streams() ([]string, error) {
	switch d {
	case "", Both:
		return []string{"upstream", "downstream"}, nil
	case ToNode:
		return []string{"upstream"}, nil
	case FromNode:
		return []string{"downstream"}, nil
	}
	return nil, fmt.Errorf("%w: direction %q (want both, to-node or from-node)", cluster.ErrBadFault, string(d))
}

func (d Direction) String() string {
	if d == "" {
		return string(Both)
	}
	return string(d)
}

// Link names for network faults' Link field.
const (
	// ClientLink is the proxy clients and sentinels reach a node through.
	ClientLink = "client"
	// ReplicationLink is the proxy a replica replicates from its master
	// through; in a Redis Cluster, its first primary's [cluster.Node.Peer].
	ReplicationLink = "repl"
	// BusLink is the proxy of a Redis Cluster node's bus: its peers reach
	// it through it (its own pings to them go through theirs).
	BusLink = "bus"
	// PeerLink is the address a Redis Cluster node announces: its replicas
	// replicate through it, and redirects name it.
	PeerLink = "peer"
)

// linkOf returns the node's link named which ("" means [ClientLink]), or
// [cluster.ErrNoLink].
func linkOf(n *cluster.Node, which string) (*netlink.Link, error) {
	if n == nil {
		return nil, fmt.Errorf("%w: nil node", cluster.ErrNoLink)
	}
	var l *netlink.Link
	switch which {
	case "", ClientLink:
		l = n.Link
	case ReplicationLink:
		l = n.ReplLink()
	case BusLink:
		l = n.Bus
	case PeerLink:
		l = n.Peer
	default:
		return nil, fmt.Errorf("%w: %q (want client, repl, bus or peer)", cluster.ErrBadFault, which)
	}
	if l == nil {
		return nil, fmt.Errorf("%w: %s has no %s link", cluster.ErrNoLink, n.Name, orClient(which))
	}
	return l, nil
}

func orClient(link string) string {
	if link == "" {
		return ClientLink
	}
	return link
}

// addToxics adds a toxic of type typ named prefix-stream on each stream
// unless the link already has it, so injecting twice is harmless.
func addToxics(ctx context.Context, l *netlink.Link, prefix, typ string, streams []string, attrs map[string]any) error {
	for _, s := range streams {
		name := prefix + "-" + s
		t, err := l.Toxic(ctx, name)
		if err != nil {
			return err
		}
		if t != nil {
			continue
		}
		if err := l.AddToxic(ctx, name, typ, s, attrs); err != nil {
			return err
		}
	}
	return nil
}

// removeToxics removes the toxics addToxics added on every stream. It
// tries every stream and returns their errors joined; a missing toxic is
// not an error.
func removeToxics(ctx context.Context, l *netlink.Link, prefix string) error {
	var errs []error
	for _, s := range []string{"upstream", "downstream"} {
		err := l.RemoveToxic(ctx, prefix+"-"+s)
		if errors.Is(err, netlink.ErrWedged) {
			return err // the other stream would only say the same
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkToxics returns the toxics addToxics added on streams, or an error
// wrapping [ErrNoEffect] if one is missing or of another type than typ.
func checkToxics(ctx context.Context, l *netlink.Link, prefix, typ string, streams []string) ([]*toxics.ToxicWrapper, error) {
	var found []*toxics.ToxicWrapper
	for _, s := range streams {
		name := prefix + "-" + s
		t, err := l.Toxic(ctx, name)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return nil, fmt.Errorf("%w: %s has no toxic %s", ErrNoEffect, l.Name(), name)
		}
		if t.Type != typ || t.Stream != s {
			return nil, fmt.Errorf("%w: toxic %s on %s is a %s on %s, want %s on %s",
				ErrNoEffect, name, l.Name(), t.Type, t.Stream, typ, s)
		}
		found = append(found, t)
	}
	return found, nil
}

// onLink returns "" for the client link and " on the repl link" otherwise,
// to end a Verify description.
func onLink(link string) string {
	if orClient(link) == ClientLink {
		return ""
	}
	return " on the " + link + " link"
}

// placeLink says whether a network fault on link can act on node of t: a
// client link anywhere, the replication link with replicas, the bus and
// peer links in a Redis Cluster, on a Redis node (not a service such as
// a resource path).
func placeLink(t cluster.Topology, node, link string) error {
	switch link {
	case "", ClientLink:
		return nil
	case ReplicationLink:
		if t.Replicas == 0 {
			return errors.New("link repl needs a topology with replicas (topology.replicas)")
		}
	case BusLink, PeerLink:
		if t.Shards == 0 {
			return fmt.Errorf("link %s needs a Redis Cluster (topology.shards)", link)
		}
	default:
		return fmt.Errorf("link must be client, repl, bus or peer, not %q", link)
	}
	if node != "" && t.NodeIndex(node) == 0 {
		return fmt.Errorf("link %s is a Redis node's, and %q is not one (n1..n%d)", link, node, t.NodeCount())
	}
	return nil
}
