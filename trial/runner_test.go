package trial_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/campaign"
	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/internal/testcluster"
	"github.com/lockpick/lockpick/internal/testetcd"
	"github.com/lockpick/lockpick/internal/testpg"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/internal/testzk"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

func TestMain(m *testing.M) {
	if trial.IsWorker() { // an isolated client started by a trial in this test binary
		if err := trial.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	trial.SilenceRedisLogs()
	os.Exit(m.Run())
}

// TestCatalogue runs every built-in scenario once and checks its verdict
// and its evidence: every fault fired with its effect and every requirement
// of the scenario file held (a "safe" mitigation met its attack), so a
// verdict cannot be met by doing nothing.
func TestCatalogue(t *testing.T) {
	testredis.Require(t, true)
	for _, s := range scenario.All() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel() // two at a time (go test -parallel, GOMAXPROCS): a verdict must not depend on an idle machine
			if arm := plainArm(s); arm != "" && slices.ContainsFunc(everyArm, func(c armCount) bool { return c.name == s.Name }) {
				t.Skipf("arm %s is this scenario unchanged, and TestCatalogue_EveryArm runs it with the same checks", arm)
			}
			requireParts(t, s)
			v, dir, err := trial.Run(context.Background(), s, &trial.Options{Trials: 1, Out: t.TempDir(), Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			tr := v.TrialResults[0]
			ev := tr.Evidence
			if !ev.Conclusive {
				t.Fatalf("inconclusive: %s", tr.Reason)
			}
			if got, want := tr.Observed, string(s.Expect); got != want {
				t.Fatalf("observed %s, want %s; anomalies: %v", got, want, v.ExampleLines())
			}
			checkAgain(t, dir, v)
			for _, f := range ev.Faults {
				if f.Fired == nil || f.Effect == "" {
					t.Errorf("fault %+v fired without an observed effect", f)
				}
			}
			if len(ev.Required) == 0 {
				t.Error("no requirement was checked")
			}
			t.Logf("%s; %d notes", ev.Summary(), len(ev.Notes))
		})
	}
}

// first returns the first anomaly of kind k, failing the test without one.
func first(t *testing.T, tr trial.TrialResult, k checker.Kind) checker.Anomaly {
	t.Helper()
	for _, a := range tr.Check.Anomalies {
		if a.Kind == k {
			return a
		}
	}
	t.Fatalf("no %s among %+v", k, tr.Check.Anomalies)
	return checker.Anomaly{}
}

// TestNoLock_ResourceCheckSeesLostUpdates runs the no-lock control: without
// a lock, the resource check itself (not only the lease check) must see
// increments lost, or a safe verdict elsewhere would prove nothing.
func TestNoLock_ResourceCheckSeesLostUpdates(t *testing.T) {
	testredis.Require(t, false)
	s, err := scenario.Lookup("no-lock")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := first(t, tr, checker.LostUpdate)
	t.Log(a.Message)
}

// TestCatalogue_EveryArm runs each arm of the scenarios whose arms expect
// different verdicts once; every arm must match its own expectation:
// redlock-tolerance (N = 2X+1 masters keep granting with X dead and are
// stuck with more), redlock-power-loss (everysec loses the lock to a power
// loss but not to kill -9; always keeps it; none loses it to both),
// redlock-split-vote (a fixed delay livelocks; a random delay or giving up
// early does not, but only with one order for all: giving up early with
// rotated orders still livelocks, one order alone does not) and
// watchdog-renewal-error (Redisson's watchdog stops after one failed
// renewal; lockcore's retries) and redlock-greedy (a
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
// write is refused; a SET NX PX or Redlock holder done within its lease
// loses only its release) and the Redis Cluster scenarios (a failover loses the
// lock to set-nx and reentrant alike; a minority primary grants it twice
// unless the lease is shorter than the election or WAIT refuses it; a
// slot migration keeps it) and getset-bare-unlock (a bare DEL frees the
// successor's lock; a release that checks ownership is refused) and
// redlock-delayed-restart and redlock-crash-restart (a node back empty
// inside the lease grants the lock twice, to RedissonRedLock too; back
// after the TTL, or with the key from its AOF, it does not, and serves a
// grant again) and
// reply-loss (releasing only the nodes that answered leaves the lost
// reply's key stuck, RedissonRedLock's too; releasing every node does not)
// and watchdog-pause (a paused holder writes late; fenced, its write is
// refused) and single-crash-restart (a master restarted empty grants the
// lock twice, fenced or reentrant alike; with AOF always it does not) and
// single-power-loss (so does one that lost power with AOF everysec; with
// always it does not) and single-clock-jump (a master whose clock jumps
// grants it twice; fenced, the late write is refused) and the etcd
// fenced arms of etcd-power-loss and etcd-member-wipe (safe as unfenced)
// and ZooKeeper's (a paused or cut-off holder writes late unless fenced by
// czxid or, cut off, it heeds Disconnected; a power loss of every member
// loses the lock only on disks that ignore fsync) and the fenced arms of
// zk-clock-jump and pg-clock-jump (the lock is kept through an hour's
// clock jump, fence or not). etcd-leader-kill runs once, in TestCatalogue:
// its fixed kill can miss a late first grant (2 of 4 trials beside busy
// loops), and a second arm would double that exposure.
func TestCatalogue_EveryArm(t *testing.T) {
	testredis.Require(t, false)
	for _, tc := range everyArm {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := scenario.Lookup(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			requireParts(t, s)
			c, dir, err := campaign.Compare(context.Background(), s, nil, &trial.Options{Out: t.TempDir(), Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Arms) != tc.arms {
				t.Fatalf("%d arms ran, want %d", len(c.Arms), tc.arms)
			}
			for _, a := range c.Arms {
				v := readVerdict(t, dir, a.Dir)
				checkAgain(t, filepath.Join(dir, a.Dir), &v)
				if !v.Matched || v.TrialsInconclusive != 0 {
					t.Errorf("arm %s: expect %s, observed %s (%d inconclusive): %v %v", a.Arm, v.Expect, v.Observed, v.TrialsInconclusive, v.Examples, inconclusiveReasons(v))
				}
				for _, tr := range v.TrialResults {
					if len(tr.Evidence.Required) == 0 {
						t.Errorf("arm %s: no requirement was checked", a.Arm)
					}
					for _, f := range tr.Evidence.Faults {
						if f.Fired == nil || f.Effect == "" {
							t.Errorf("arm %s: fault %+v fired without an observed effect", a.Arm, f)
						}
					}
				}
			}
		})
	}
}

// plainArm names an arm of s that is s unchanged, expecting what s
// expects, or "".
func plainArm(s scenario.Scenario) string {
	for _, name := range s.ArmNames() {
		v, err := s.Arm(name)
		if err != nil || v.Expect != s.Expect {
			continue
		}
		v.Name, v.Summary, v.Explain, v.Arms = s.Name, s.Summary, s.Explain, s.Arms
		if reflect.DeepEqual(v, s.WithDefaults()) {
			return name
		}
	}
	return ""
}

// An armCount is a scenario whose every arm TestCatalogue_EveryArm runs,
// and how many arms it has.
type armCount struct {
	name string
	arms int
}

// everyArm lists the scenarios whose arms TestCatalogue_EveryArm runs.
var everyArm = []armCount{{"redlock-tolerance", 5}, {"redlock-power-loss", 6}, {"redlock-split-vote", 6}, {"watchdog-renewal-error", 2}, {"redlock-greedy", 2}, {"redlock-slow-nodes", 3}, {"failover-delayed-promotion", 2}, {"redlock-failed-acquire-release", 3}, {"reentrant-lost-reply", 2},
	{"watchdog-reconnect", 3}, {"partition-holder", 6}, {"cluster-failover-lock-loss", 2}, {"cluster-minority-primary", 3},
	{"cluster-slot-migration", 2}, {"etcd-pause-holder", 2}, {"etcd-waiter-lease-expiry", 2}, {"etcd-partition-holder", 3},
	{"getset-bare-unlock", 3}, {"redlock-delayed-restart", 2}, {"redlock-crash-restart", 4}, {"reply-loss", 3},
	{"watchdog-pause", 2}, {"single-crash-restart", 5}, {"etcd-power-loss", 3}, {"redlock-replica-failover", 2},
	{"single-power-loss", 5}, {"single-clock-jump", 4}, {"etcd-member-wipe", 2},
	{"zk-pause-holder", 2}, {"zk-holder-cut", 3}, {"zk-power-loss", 3},
	{"zk-clock-jump", 2}, {"pg-clock-jump", 2}}

// requireParts skips t (or fails it under LOCKPICK_REQUIRE_REDIS=1) when
// this host lacks what s needs besides Redis: etcd, PostgreSQL, ZooKeeper,
// FUSE for a power loss.
func requireParts(t *testing.T, s scenario.Scenario) {
	t.Helper()
	if s.Topology.Etcd > 0 {
		testetcd.Require(t)
	}
	if s.Topology.Postgres > 0 {
		testpg.Require(t)
	}
	if s.Topology.ZooKeeper > 0 {
		testzk.Require(t)
	}
	if strings.Contains(s.FaultText(), "power-loss") {
		testcluster.RequireLazyDisks(t)
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

// checkAgain checks run folder dir again as `lockpick check` does and
// fails unless that gives v, the verdict its run gave.
func checkAgain(t *testing.T, dir string, v *results.Verdict) {
	t.Helper()
	run, err := campaign.ReadRun(dir)
	if err != nil || run == nil {
		t.Fatalf("read the run folder: %v", err)
	}
	byTrial := map[string]campaign.Checked{}
	for _, tr := range v.TrialResults {
		c, err := campaign.CheckHistory(filepath.Join(dir, tr.Dir, checker.HistoryFile), trial.CheckTimeout, 0)
		if err != nil {
			t.Fatal(err)
		}
		byTrial[tr.Dir] = c
	}
	w, err := campaign.CheckRun(run, byTrial)
	if err != nil {
		t.Fatal(err)
	}
	type counts struct {
		observed                        string
		matched                         bool
		anomaly, violated, inconclusive int
		anomalies                       string
	}
	got := counts{w.Observed, w.Matched, w.TrialsWithAnomaly, w.TrialsViolated, w.TrialsInconclusive, results.CountsText(w.Anomalies)}
	want := counts{v.Observed, v.Matched, v.TrialsWithAnomaly, v.TrialsViolated, v.TrialsInconclusive, results.CountsText(v.Anomalies)}
	if got != want {
		t.Errorf("check of the run folder gives %+v, the run gave %+v", got, want)
	}
}

func readVerdict(t *testing.T, dir, arm string) results.Verdict {
	t.Helper()
	var v results.Verdict
	b, err := os.ReadFile(filepath.Join(dir, arm, "verdict.json"))
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}
