package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A PowerLossFault crashes a node as a host losing power does: the process
// dies with kill -9, every write of its data it had not synced (data not
// fsynced, a rename whose folder was not fsynced) is lost, and it starts
// again after Delay. A plain kill -9 ([RestartFault]) loses nothing the
// kernel already has, so only this fault tells appendfsync everysec (up
// to a second of writes lost) from always (nothing acknowledged lost). The
// node's data must be on a lazy disk ([cluster.NewDisk]); if it is not,
// Inject returns an error wrapping [cluster.ErrNoPowerLoss] before it
// touches the node.
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

// Inject kills the node, drops what it had not synced, waits Delay and
// starts it again, returning once it serves. If ctx ends during the delay
// it returns ctx's error and leaves the node down for Heal.
func (f *PowerLossFault) Inject(ctx context.Context, n *cluster.Node) error {
	disk, err := diskOf(n)
	if err != nil {
		return err
	}
	return crashAndRestart(ctx, n, f.Delay, func(cluster.Proc) error {
		cut, err := disk.PowerLoss()
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.cut = &cut
		f.mu.Unlock()
		return nil
	})
}

// diskOf returns the node's lazy disk, or an error wrapping
// [cluster.ErrNoPowerLoss].
func diskOf(n *cluster.Node) (*cluster.Disk, error) {
	p, err := procOf(n)
	if err != nil {
		return nil, err
	}
	d, ok := p.(cluster.DurableProc)
	if !ok || d.Disk() == nil || !d.Disk().Lazy() {
		return nil, fmt.Errorf("%w: %s's data is not on a lazy disk", cluster.ErrNoPowerLoss, n.Name)
	}
	return d.Disk(), nil
}

// Heal starts the node if it is still down.
func (f *PowerLossFault) Heal(ctx context.Context, n *cluster.Node) error { return startNode(ctx, n) }

// Verify returns e.g. "back up, lost 58 unsynced bytes of
// appendonlydir/appendonly.aof.1.incr.aof" if the node serves again,
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

// LostBytes returns how many unsynced bytes the last Inject dropped, and
// false if it has not run.
func (f *PowerLossFault) LostBytes() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut == nil {
		return 0, false
	}
	return f.cut.Total(), true
}

// Describe returns e.g. "power loss, back after 5s".
func (f *PowerLossFault) Describe() string {
	if f.Delay > 0 {
		return "power loss, back after " + f.Delay.String()
	}
	return "power loss"
}

func init() { RegisterFault("power-loss", func() Fault { return new(PowerLossFault) }) }

// Place accepts the Redis nodes, etcd members and PostgreSQL nodes (see [Placer]).
func (f *PowerLossFault) Place(t cluster.Topology, node string) error { return onProcess(t, node) }
