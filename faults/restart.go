package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A RestartFault crashes a node with kill -9 and starts it again after
// Delay. Redlock's mitigation for crash-restart is a Delay of at least the
// longest lock TTL, so that every lock the node granted has expired before it
// answers again; with Wipe the node also loses whatever it persisted, like a
// replaced host.
type RestartFault struct {
	// Delay is how long the node stays down. default: 0 (restart at once).
	Delay time.Duration `json:"delay"`
	// Wipe removes the node's RDB and AOF files before the restart.
	Wipe bool `json:"wipe"`

	idBefore string // a wiped etcd member's id before the crash, for Verify
}

var (
	_ Fault    = (*RestartFault)(nil)
	_ Verifier = (*RestartFault)(nil)
)

// Inject kills the node, waits Delay and starts it again, returning once it
// answers PING, so it blocks for at least Delay. If ctx ends during the
// delay it returns ctx's error and leaves the node down for Heal to start.
func (f *RestartFault) Inject(ctx context.Context, n *cluster.Node) error {
	if f.Wipe && cluster.IsEtcdMember(n) {
		f.idBefore, _ = cluster.EtcdMemberID(ctx, n, 500*time.Millisecond) // "" fails Verify
	}
	return crashAndRestart(ctx, n, f.Delay, func(p cluster.Proc) error {
		if !f.Wipe {
			return nil
		}
		if err := p.WipeData(); err != nil {
			return fmt.Errorf("cluster: wipe %s: %w", n.Name, err)
		}
		return nil
	})
}

// crashAndRestart kills n's process, lets lost take from its files what
// the crash lost, waits delay and starts it again, returning once it
// answers PING. If ctx ends during the delay it returns ctx's error and
// leaves the node down for a heal to start.
func crashAndRestart(ctx context.Context, n *cluster.Node, delay time.Duration, lost func(cluster.Proc) error) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil {
		return err
	}
	if err := lost(p); err != nil {
		return err
	}
	if err := cluster.SleepCtx(ctx, delay); err != nil {
		return err
	}
	return p.Start(ctx)
}

// Heal starts the node if it is still down.
func (f *RestartFault) Heal(ctx context.Context, n *cluster.Node) error { return startNode(ctx, n) }

// startNode starts n's process if it is down.
func startNode(ctx context.Context, n *cluster.Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	return p.Start(ctx)
}

// Verify returns e.g. "back up (uptime 0s), wiped (…)" if the process
// answers PING on its own address, with the uptime its INFO reports (an
// etcd member: if its /health says true), and an error wrapping
// [ErrNoEffect] if not. With Wipe it also checks the node lost its data:
// see [RestartFault.verifyWiped].
func (f *RestartFault) Verify(ctx context.Context, n *cluster.Node) (string, error) {
	p, err := backUp(n)
	if err != nil {
		return "", err
	}
	s := "back up"
	ictx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if cluster.IsEtcdMember(n) {
		s += " (etcd /health true)"
	} else if mode, err := cluster.ZooKeeperServing(n, 500*time.Millisecond); err == nil {
		s += " (serves as " + mode + ")"
	} else if cluster.IsPostgresNode(n) {
		s += " (answers SELECT 1)"
	} else if m, err := cluster.Info(ictx, p.Addr(), "server"); err == nil && m["uptime_in_seconds"] != "" {
		s += " (uptime " + m["uptime_in_seconds"] + "s)"
	}
	if f.Wipe {
		w, err := f.verifyWiped(ctx, n, p)
		if err != nil {
			return "", err
		}
		s += ", " + w
	}
	return s, nil
}

// verifyWiped checks, from the node itself, that it came back without its
// data: a Redis node's log shows its last start loaded nothing from disk;
// an etcd member reports another member id than before the crash (it was
// replaced). It returns an error wrapping [ErrNoEffect] if not.
func (f *RestartFault) verifyWiped(ctx context.Context, n *cluster.Node, p cluster.Proc) (string, error) {
	if cluster.IsZooKeeperMember(n) {
		zxid, err := cluster.ZooKeeperLoadedZxid(p.LogPath())
		switch {
		case err != nil:
			return "", noEffect("%s: %v", n.Name, err)
		case zxid != "0x0":
			return "", noEffect("%s loaded its data at its restart (highest zxid %s)", n.Name, zxid)
		}
		return "wiped (its start loaded zxid 0x0)", nil
	}
	if cluster.IsEtcdMember(n) {
		id, err := cluster.EtcdMemberID(ctx, n, 500*time.Millisecond)
		switch {
		case err != nil:
			return "", noEffect("%s: no member id after the restart: %v", n.Name, err)
		case f.idBefore == "":
			return "", noEffect("%s's member id before the crash is unknown: cannot tell it was replaced", n.Name)
		case id == f.idBefore:
			return "", noEffect("%s came back as member %s, its id before the wipe: not replaced", n.Name, id)
		}
		return "wiped (member " + id + ", was " + f.idBefore + ")", nil
	}
	loaded, line, err := cluster.LoadedFromDisk(p.LogPath())
	switch {
	case err != nil:
		return "", noEffect("%s: %v", n.Name, err)
	case loaded:
		return "", noEffect("%s loaded data of its own at its restart: %q", n.Name, line)
	}
	return "wiped (its start loaded nothing from disk)", nil
}

// Describe returns e.g. "restart after 5s, wiped".
func (f *RestartFault) Describe() string {
	s := "restart"
	if f.Delay > 0 {
		s += " after " + f.Delay.String()
	}
	if f.Wipe {
		s += ", wiped"
	}
	return s
}

func init() { RegisterFault("restart", func() Fault { return new(RestartFault) }) }

// etcdBackWithin bounds how long a restarted etcd member may take to say
// /health true: it does so only once the cluster has a leader again, and a
// restarted leader's peers elect one after one or two election timeouts
// (1 s each; more after a split vote).
const etcdBackWithin = 4 * time.Second

// backUp returns n's process if it answers PING on its own address (an
// etcd member: /health true within etcdBackWithin), and an error wrapping
// [ErrNoEffect] if not.
func backUp(n *cluster.Node) (cluster.Proc, error) {
	p, err := procOf(n)
	if err != nil {
		return nil, err
	}
	if cluster.IsPostgresNode(n) {
		if err := cluster.PostgresPing(context.Background(), p.Addr(), time.Second); err != nil {
			return nil, noEffect("%s does not answer SELECT 1 on %s: %v", n.Name, p.Addr(), err)
		}
		return p, nil
	}
	if cluster.IsZooKeeperMember(n) {
		_, err := zkBackUp(n)
		return p, err
	}
	if cluster.IsEtcdMember(n) {
		ctx, cancel := context.WithTimeout(context.Background(), etcdBackWithin)
		defer cancel()
		err := cluster.Poll(ctx, func() error {
			if !cluster.EtcdHealthy(ctx, n, 500*time.Millisecond) {
				return noEffect("etcd member %s is not healthy on %s (/health) %s after its start", n.Name, p.Addr(), etcdBackWithin)
			}
			return nil
		})
		return p, err
	}
	if err := cluster.Ping(p.Addr(), 300*time.Millisecond); err != nil {
		return nil, noEffect("%s does not answer PING on %s: %v", n.Name, p.Addr(), err)
	}
	return p, nil
}

// Place accepts the Redis nodes, etcd members, ZooKeeper members and
// PostgreSQL nodes, the latter without wipe (see [Placer]).
func (f *RestartFault) Place(t cluster.Topology, node string) error {
	if f.Wipe && t.Postgres > 0 {
		return errors.New("wipe is not offered on PostgreSQL nodes (a primary would come back as a new, empty cluster its replica cannot follow)")
	}
	return onProcess(t, node)
}
