package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
)

// A Step is one fault in a scenario's schedule.
type Step struct {
	// At is when the fault is applied, from the start of the trial.
	At Duration `json:"at" yaml:"at"`
	// Jitter adds a random delay in [0, Jitter), drawn from the trial's seed.
	Jitter Duration `json:"jitter,omitempty" yaml:"jitter"`
	// Fault is what happens: "cut-replication" (node: a replica),
	// "restore-replication", "kill", "restart", "partition", "heal".
	Fault string `json:"fault" yaml:"fault"`
	// Node names the target node, e.g. "n1".
	Node string `json:"node,omitempty" yaml:"node"`
	// Client names the target client of pause-client and resume-client.
	Client int `json:"client,omitempty" yaml:"client"`
}

func (s Step) String() string {
	if s.Client > 0 {
		return fmt.Sprintf("%s c%d", s.Fault, s.Client)
	}
	return s.Fault + " " + s.Node
}

func (s Step) validate() error {
	switch s.Fault {
	case "cut-replication", "restore-replication", "kill", "restart", "partition", "heal", "pause-client", "resume-client":
		return nil
	}
	return fmt.Errorf("unknown fault %q", s.Fault)
}

// A trialEnv is what the nemesis can reach: the cluster, and the process ids
// of isolated clients.
type trialEnv struct {
	c    *cluster.Cluster
	pids map[int]int
}

// healAll undoes every pause of an isolated client, so none stays frozen.
func (e *trialEnv) healAll() {
	for _, pid := range e.pids {
		_ = cluster.ResumePID(pid)
	}
}

// apply performs the step.
func (s Step) apply(ctx context.Context, e *trialEnv) error {
	switch s.Fault {
	case "pause-client", "resume-client":
		pid, ok := e.pids[s.Client]
		if !ok {
			return fmt.Errorf("%w: client %d is not isolated", ErrBadScenario, s.Client)
		}
		if s.Fault == "pause-client" {
			return cluster.PausePID(pid)
		}
		return cluster.ResumePID(pid)
	}
	c := e.c
	n, err := c.Node(s.Node)
	if err != nil {
		return err
	}
	switch s.Fault {
	case "cut-replication":
		if n.Repl == nil {
			return fmt.Errorf("%w: %s is not a replica", ErrBadScenario, s.Node)
		}
		n.Repl.Cut()
	case "restore-replication":
		if n.Repl == nil {
			return fmt.Errorf("%w: %s is not a replica", ErrBadScenario, s.Node)
		}
		return n.Repl.Restore()
	case "kill":
		return n.Proc.Kill()
	case "restart":
		return n.Proc.Start(ctx)
	case "partition":
		n.Link.Cut()
	case "heal":
		return n.Link.Restore()
	}
	return nil
}

// runNemesis applies the schedule, recording each fault as an info event of
// process -1, until the schedule ends or ctx is done.
func runNemesis(ctx context.Context, c *trialEnv, steps []Step, rng *rand.Rand, rec *checker.Recorder, start time.Time) error {
	for _, s := range steps {
		at := s.At.D()
		if s.Jitter > 0 {
			at += time.Duration(rng.Int64N(int64(s.Jitter)))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(start.Add(at))):
		}
		rec.Record(checker.Event{Process: -1, Type: checker.Invoke, F: "nemesis", Value: checker.TextValue(s.String()), Node: s.Node})
		if err := s.apply(ctx, c); err != nil {
			rec.Record(checker.Event{Process: -1, Type: checker.Fail, F: "nemesis", Value: checker.TextValue(s.String()), Node: s.Node, Error: err.Error()})
			return fmt.Errorf("nemesis %s: %w", s, err)
		}
		rec.Record(checker.Event{Process: -1, Type: checker.Info, F: "nemesis", Value: checker.TextValue(s.String()), Node: s.Node})
	}
	return nil
}
