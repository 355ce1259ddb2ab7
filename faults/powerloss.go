package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A PowerLossFault crashes a node as a host losing power does: the process
// dies with kill -9 and every byte of its data files it had not fsynced is
// lost, then it starts again after Delay. A plain kill -9 ([RestartFault])
// loses nothing the kernel already has, so only this fault tells
// appendfsync everysec (up to a second of writes lost) from always
// (nothing acknowledged lost). The node must run under the fsync shim
// ([cluster.ProcessBackend.FsyncShim]); without it Inject returns an error wrapping
// [cluster.ErrNoFsyncShim] before it touches the node.
type PowerLossFault struct {
	// Delay is how long the node stays down. default: 0 (restart at once).
	Delay time.Duration `json:"delay"`

	mu  sync.Mutex
	cut *cluster.PowerCut // what the last Inject dropped
}

var (
	_ Fault    = (*PowerLossFault)(nil)
	_ Verifier = (*PowerLossFault)(nil)
)

// Inject kills the node, truncates its files to what it had fsynced, waits
// Delay and starts it again, returning once it answers PING. If ctx ends
// during the delay it returns ctx's error and leaves the node down for Heal.
func (f *PowerLossFault) Inject(ctx context.Context, n *cluster.Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	d, ok := p.(cluster.DurableProc)
	if !ok {
		return fmt.Errorf("%w: %s (%T cannot lose power)", cluster.ErrNoFsyncShim, n.Name, p)
	}
	if err := d.CanLosePower(); err != nil {
		return err
	}
	return crashAndRestart(ctx, n, f.Delay, func(cluster.Proc) error {
		cut, err := d.PowerLoss()
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.cut = &cut
		f.mu.Unlock()
		return nil
	})
}

// Heal starts the node if it is still down.
func (f *PowerLossFault) Heal(ctx context.Context, n *cluster.Node) error { return startNode(ctx, n) }

// Verify returns e.g. "back up, lost 58 unsynced bytes of
// appendonlydir/appendonly.aof.1.incr.aof" if the node answers PING again,
// and an error wrapping [ErrNoEffect] if it does not.
func (f *PowerLossFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	if _, err := backUp(n); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut == nil {
		return "", noEffect("%s lost no power: Inject did not run", n.Name)
	}
	return "back up, " + f.cut.String(), nil
}

// Describe returns e.g. "power loss, back after 5s".
func (f *PowerLossFault) Describe() string {
	if f.Delay > 0 {
		return "power loss, back after " + f.Delay.String()
	}
	return "power loss"
}

func init() { RegisterFault("power-loss", func() Fault { return new(PowerLossFault) }) }

// Place accepts the Redis nodes only (see [Placer]); it refuses etcd
// members, which the fsync shim cannot reach.
func (f *PowerLossFault) Place(t cluster.Topology, node string) error {
	return notOnEtcd(t, node, "fsync")
}
