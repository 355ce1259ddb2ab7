package cluster

import "context"

// A CutReplicationFault partitions a replica from its master: the
// replication connection is closed and reconnects are refused, while
// clients and sentinels still reach both nodes. Writes acknowledged by the
// master from then on never reach the replica, the window in which a
// failover loses a lock.
type CutReplicationFault struct{}

var (
	_ Fault    = (*CutReplicationFault)(nil)
	_ Verifier = (*CutReplicationFault)(nil)
)

// Inject cuts the link. It returns [ErrNoLink] on a node that is not a replica.
func (f *CutReplicationFault) Inject(ctx context.Context, n *Node) error {
	l, err := linkOf(n, ReplicationLink)
	if err != nil {
		return err
	}
	return l.Cut()
}

// Heal restores the link; the replica resyncs by itself.
func (f *CutReplicationFault) Heal(ctx context.Context, n *Node) error {
	l, err := linkOf(n, ReplicationLink)
	if err != nil {
		return err
	}
	return l.Restore()
}

// Verify returns "replication link cut" if the node's replication proxy is
// cut, and an error wrapping [ErrNoEffect] if it is open.
func (f *CutReplicationFault) Verify(ctx context.Context, n *Node) (string, error) {
	l, err := linkOf(n, ReplicationLink)
	if err != nil {
		return "", err
	}
	if !l.IsCut() {
		return "", noEffect("replication link %s is open", l.Name())
	}
	return "replication link cut", nil
}

// Describe returns "cut replication".
func (f *CutReplicationFault) Describe() string { return "cut replication" }

func init() { RegisterFault("cut-replication", func() Fault { return new(CutReplicationFault) }) }
