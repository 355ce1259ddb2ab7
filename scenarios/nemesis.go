package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
)

// A Step is one fault in a scenario's schedule.
//
// The fault kinds are cluster's ("kill", "restart", "pause", "partition",
// "latency", "drop-replies", "reset", "cut-replication", "clock-jump",
// "clock-rate", "promote", "sentinel-failover"), configured by Params, plus
// "pause-client", which freezes an isolated client's whole process.
type Step struct {
	// At is when the fault is injected, from the start of the trial.
	At Duration `json:"at" yaml:"at"`
	// Jitter adds a random delay in [0, Jitter), drawn from the trial's seed.
	Jitter Duration `json:"jitter,omitempty" yaml:"jitter"`
	// Fault is the fault kind.
	Fault string `json:"fault" yaml:"fault"`
	// Node names the target: a Redis node "n1".., or client p's path to the
	// resource "r<p>".
	Node string `json:"node,omitempty" yaml:"node"`
	// Client names the isolated client of pause-client.
	Client int `json:"client,omitempty" yaml:"client"`
	// For heals the fault this long after it was injected; 0 leaves it until
	// the end of the trial, when every fault is healed.
	For Duration `json:"for,omitempty" yaml:"for"`
	// Params configures the fault, e.g. {delay: 3s} for restart.
	Params map[string]any `json:"params,omitempty" yaml:"params"`
}

func (s Step) target() string {
	if s.Fault == "pause-client" {
		return fmt.Sprintf("c%d", s.Client)
	}
	return s.Node
}

// fault builds the step's fault; pause-client needs the worker's pid.
func (s Step) fault(pids map[int]int) (cluster.Fault, error) {
	if s.Fault == "pause-client" {
		pid, ok := pids[s.Client]
		if !ok && pids != nil {
			return nil, fmt.Errorf("%w: client %d is not isolated", ErrBadScenario, s.Client)
		}
		return &cluster.ProcessPauseFault{PID: pid}, nil
	}
	return cluster.NewFault(s.Fault, s.Params)
}

func (s Step) validate() error {
	_, err := s.fault(nil)
	return err
}

// A trialEnv is what the nemesis can reach: the cluster, and the process ids
// of isolated clients.
type trialEnv struct {
	c    *cluster.Cluster
	pids map[int]int

	mu       sync.Mutex
	injected []injected
}

type injected struct {
	f    cluster.Fault
	node *cluster.Node
}

// An action is an inject or a heal at a point in the trial.
type action struct {
	at   time.Duration
	heal bool
	step int
}

// runNemesis plays the schedule, recording each action as a nemesis invoke
// when it starts and an info (or fail) when it is done. Actions run in
// their own goroutines, so a fault that takes time (a delayed restart)
// does not hold up the next one.
func runNemesis(ctx context.Context, env *trialEnv, steps []Step, rng *rand.Rand, rec *checker.Recorder, start time.Time) error {
	faults := make([]cluster.Fault, len(steps))
	nodes := make([]*cluster.Node, len(steps))
	var plan []action
	for i, s := range steps {
		f, err := s.fault(env.pids)
		if err != nil {
			return err
		}
		faults[i] = f
		if s.Fault != "pause-client" {
			if nodes[i], err = env.c.Node(s.Node); err != nil {
				return fmt.Errorf("%w: %v", ErrBadScenario, err)
			}
		}
		at := s.At.D()
		if s.Jitter > 0 {
			at += time.Duration(rng.Int64N(int64(s.Jitter)))
		}
		plan = append(plan, action{at: at, step: i})
		if s.For > 0 {
			plan = append(plan, action{at: at + s.For.D(), heal: true, step: i})
		}
	}
	sort.SliceStable(plan, func(i, j int) bool { return plan[i].at < plan[j].at })

	var wg sync.WaitGroup
	errs := make(chan error, len(plan))
	for _, a := range plan {
		if !sleep(ctx, time.Until(start.Add(a.at))) {
			break
		}
		f, n := faults[a.step], nodes[a.step]
		desc := cluster.Describe(f, n)
		if n == nil {
			desc += " " + steps[a.step].target()
		}
		if a.heal {
			desc = "heal " + desc
		}
		rec.Record(checker.Event{Process: -1, Type: checker.Invoke, F: checker.FNemesis, Value: checker.TextValue(desc), Node: steps[a.step].target()})
		wg.Go(func() {
			var err error
			if a.heal {
				err = f.Heal(ctx, n)
			} else {
				env.remember(f, n)
				err = f.Inject(ctx, n)
			}
			e := checker.Event{Process: -1, Type: checker.Info, F: checker.FNemesis, Value: checker.TextValue(desc), Node: steps[a.step].target()}
			if err != nil && ctx.Err() == nil {
				e.Type, e.Error = checker.Fail, err.Error()
				errs <- fmt.Errorf("nemesis %s: %w", desc, err)
			}
			rec.Record(e)
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (e *trialEnv) remember(f cluster.Fault, n *cluster.Node) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.injected = append(e.injected, injected{f, n})
}

// healAll heals every fault injected, newest first, so no client stays
// frozen and no node stays down while the trial winds up.
func (e *trialEnv) healAll(ctx context.Context) {
	e.mu.Lock()
	inj := e.injected
	e.injected = nil
	e.mu.Unlock()
	for i := len(inj) - 1; i >= 0; i-- {
		_ = inj[i].f.Heal(ctx, inj[i].node)
	}
	for _, pid := range e.pids {
		_ = cluster.ResumePID(pid)
	}
}

// Schedule lists the scenario's faults in words, e.g. "+300ms kill n1".
func (sc Scenario) Schedule() string {
	var b strings.Builder
	for i, s := range sc.Faults {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "+%v %s %s", s.At.D(), s.Fault, s.target())
		if s.For > 0 {
			fmt.Fprintf(&b, " for %v", s.For.D())
		}
	}
	return b.String()
}
