package faults

import (
	"context"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// zkBackWithin bounds how long a restarted ZooKeeper member may take to
// serve again: it does so once it has joined a leader, and a restarted
// leader's peers first elect one (under a second at rest; ZooKeeper's
// election backs off to seconds when a vote is lost).
const zkBackWithin = 15 * time.Second

// zkBackUp returns the mode of the ZooKeeper member n once it serves
// (srvr's Mode: leader, follower, standalone), polled for at most
// zkBackWithin, and an error wrapping [ErrNoEffect] if it does not.
func zkBackUp(n *cluster.Node) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), zkBackWithin)
	defer cancel()
	var mode string
	err := cluster.Poll(ctx, func() error {
		m, err := cluster.ZooKeeperServing(n, 500*time.Millisecond)
		if err != nil {
			return noEffect("ZooKeeper member %s does not serve %s after its start: %v", n.Name, zkBackWithin, err)
		}
		mode = m
		return nil
	})
	return mode, err
}
