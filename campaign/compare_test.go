package campaign_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// TestCatalogue_EveryArm runs each arm of the scenarios whose arms expect
// different verdicts once; every arm must match its own expectation:
// redlock-tolerance (N = 2X+1 masters keep granting with X dead and are
// stuck with more), redlock-power-loss (everysec loses the lock to a power
// loss but not to kill -9; always keeps it; none loses it to both),
// redlock-split-vote (a fixed delay livelocks; a random delay or giving up
// early does not) and watchdog-renewal-error (Redisson's watchdog stops
// after one failed renewal; lockcore's retries) and redlock-greedy (a
// client that stopped at a majority loses the lock to a restart; a greedy
// one does not) and redlock-slow-nodes (ignoring the time a silent node
// cost is unsafe; Redlock's validity or a short node timeout is not) and
// failover-delayed-promotion (a replica promoted inside the lease grants
// the lock twice; one promoted after it does not) and
// redlock-failed-acquire-release (after replies were lost, releasing every
// node frees the lock; releasing only those that said yes leaves it stuck)
// and reentrant-lost-reply (Redisson's counting of a retried acquire
// starves the other client; lockcore's does not) and watchdog-reconnect
// (lockcore's watchdog renews again after a reset, Redisson's stops; out
// of reach, the holder is told before its lease ends and does not write)
// and partition-holder (a partitioned holder writes late; fenced, its
// write is refused) and the Redis Cluster scenarios (a failover loses the
// lock to set-nx and reentrant alike; a minority primary grants it twice
// unless the lease is shorter than the election or WAIT refuses it; a
// slot migration keeps it).
func TestCatalogue_EveryArm(t *testing.T) {
	testredis.Require(t, false)
	for _, tc := range []struct {
		name string
		arms int
	}{{"redlock-tolerance", 5}, {"redlock-power-loss", 6}, {"redlock-split-vote", 4}, {"watchdog-renewal-error", 2}, {"redlock-greedy", 2}, {"redlock-slow-nodes", 3}, {"failover-delayed-promotion", 2}, {"redlock-failed-acquire-release", 2}, {"reentrant-lost-reply", 2},
		{"watchdog-reconnect", 3}, {"partition-holder", 3}, {"cluster-failover-lock-loss", 2}, {"cluster-minority-primary", 3},
		{"cluster-slot-migration", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenario.Lookup(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			c, dir, err := campaign.Compare(context.Background(), s, nil, &trial.Options{Out: t.TempDir(), Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Arms) != tc.arms {
				t.Fatalf("%d arms ran, want %d", len(c.Arms), tc.arms)
			}
			for _, a := range c.Arms {
				v := readVerdict(t, dir, a.Dir)
				if !v.Matched || v.TrialsInconclusive != 0 {
					t.Errorf("arm %s: expect %s, observed %s (%d inconclusive): %v %v", a.Arm, v.Expect, v.Observed, v.TrialsInconclusive, v.Examples, inconclusiveReasons(v))
				}
			}
		})
	}
}

// inconclusiveReasons lists why trials were inconclusive, for a failure message.
func inconclusiveReasons(v results.Verdict) []string {
	var out []string
	for _, t := range v.TrialResults {
		if t.Reason != "" {
			out = append(out, fmt.Sprintf("trial %d: %s", t.Trial, t.Reason))
		}
	}
	return out
}
