package cluster

import (
	"context"
	"fmt"
	"time"
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
}

var (
	_ Fault    = (*RestartFault)(nil)
	_ Verifier = (*RestartFault)(nil)
)

// Inject kills the node, waits Delay and starts it again, returning once it
// answers PING, so it blocks for at least Delay. If ctx ends during the
// delay it returns ctx's error and leaves the node down for Heal to start.
func (f *RestartFault) Inject(ctx context.Context, n *Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil {
		return err
	}
	if f.Wipe {
		if err := p.WipeData(); err != nil {
			return fmt.Errorf("cluster: wipe %s: %w", n.Name, err)
		}
	}
	if err := sleepCtx(ctx, f.Delay); err != nil {
		return err
	}
	return p.Start(ctx)
}

// Heal starts the node if it is still down.
func (f *RestartFault) Heal(ctx context.Context, n *Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	return p.Start(ctx)
}

// Verify returns e.g. "back up (uptime 0s), wiped" if the process answers
// PING on its own address, with the uptime its INFO reports, and an error
// wrapping [ErrNoEffect] if it does not answer.
func (f *RestartFault) Verify(ctx context.Context, n *Node) (string, error) {
	p, err := procOf(n)
	if err != nil {
		return "", err
	}
	if err := ping(p.Addr(), 300*time.Millisecond); err != nil {
		return "", noEffect("%s does not answer PING on %s: %v", n.Name, p.Addr(), err)
	}
	s := "back up"
	ictx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if m, err := info(ictx, p.Addr(), "server"); err == nil && m["uptime_in_seconds"] != "" {
		s += " (uptime " + m["uptime_in_seconds"] + "s)"
	}
	if f.Wipe {
		s += ", wiped"
	}
	return s, nil
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
