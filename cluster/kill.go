package cluster

import "context"

// A KillFault crashes a node with kill -9 and leaves it down until healed;
// Heal starts it again on the same port with the data it persisted (see
// [Persistence]). On a stopped node Inject does nothing; on a running one
// Heal does nothing.
type KillFault struct{}

var _ Fault = (*KillFault)(nil)

// Inject sends SIGKILL and waits for the process to exit.
func (f *KillFault) Inject(ctx context.Context, n *Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	return p.Kill()
}

// Heal restarts the node if it is down and waits until it answers PING.
func (f *KillFault) Heal(ctx context.Context, n *Node) error {
	p, err := procOf(n)
	if err != nil {
		return err
	}
	return p.Start(ctx)
}

// Describe returns "kill".
func (f *KillFault) Describe() string { return "kill" }

func init() { RegisterFault("kill", func() Fault { return new(KillFault) }) }
