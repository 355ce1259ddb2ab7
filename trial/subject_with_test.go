package trial_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

func TestScenario_WithSubject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scenario, subject string
		command           []string
		want              string // the new name, or a piece of the refusal
	}{
		{"failover-lock-loss", "redislock", nil, "failover-lock-loss@redislock"},
		{"single-baseline", "redislock", nil, "single-baseline@redislock"},
		{"redlock-crash-restart", "redsync", nil, "redlock-crash-restart@redsync"},
		{"single-baseline", "redsync", nil, "single-baseline@redsync"},
		{"single-baseline", "set-nx", nil, "single-baseline"},
		{"redlock-crash-restart", "external", []string{"/bin/extlock", "-v"}, "redlock-crash-restart@extlock"},
		{"gc-pause-fenced", "external", []string{"/bin/extlock"}, "gc-pause-fenced@extlock"},
		{"redlock-crash-restart", "redislock", nil, "single-instance lock, and the scenario is a Redlock topology of 5"},
		{"failover-lock-loss", "redsync", nil, "replicas that sentinels promote"},
		{"failover-lock-loss", "redlock", nil, "replicas that sentinels promote"},
		{"failover-wait-replica", "redislock", nil, "failover-wait-replica@redislock"}, // WAIT is set-nx's, dropped
		{"gc-pause-fenced", "redislock", nil, "sets fenced, which only etcd-mutex and external and pg-advisory and pg-advisory-fenced and reentrant and set-nx and zk-lock and zk-lock-fenced honours"},
		{"legacy-getset-skew", "redsync", nil, "sets clock_skew"},
		{"reply-loss", "redsync", nil, "reply-loss@redsync"}, // release_acquired_only is lockpick's Redlock's, dropped
		{"naive-setnx-expire-crash", "external", []string{"x"}, "sets crash_after_setnx"},
		{"single-baseline", "external", nil, "lock.command"},
		{"redlock-split-vote", "redsync", nil, "redlock-split-vote@redsync"},
		{"reentrant-wait-reenter", "redislock", nil, "reentrant-wait-reenter@redislock"},
		{"getset-naive-recovery", "set-nx", nil, "sets naive_recovery"},
		{"redlock-greedy", "multilock", nil, "redlock-greedy@multilock"},
		{"single-baseline", "no-such-lock", nil, "unknown subject"},
	} {
		t.Run(tc.scenario+"@"+tc.subject, func(t *testing.T) {
			s, err := scenario.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			v, err := s.WithSubject(tc.subject, tc.command)
			if err != nil {
				if !errors.Is(err, scenario.ErrBadScenario) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %q, want one wrapping ErrBadScenario that says %q", err, tc.want)
				}
				return
			}
			if got := v.Name; got != tc.want {
				t.Fatalf("name %q, want %q", got, tc.want)
			}
			if got, want := v.Lock.Kind, tc.subject; got != want {
				t.Errorf("lock kind %q, want %q", got, want)
			}
			if v.Name != s.Name && len(v.Arms) != 0 {
				t.Errorf("arms %v kept; they name locks of their own", v.ArmNames())
			}
		})
	}
}

// TestScenario_WithSubjectShape: a lock program that declares its shape
// is skipped where a built-in subject of that shape would be.
func TestScenario_WithSubjectShape(t *testing.T) {
	t.Parallel()
	ext := []string{"/bin/extlock"}
	for _, tc := range []struct {
		scenario, shape string
		want            string // the new name, or a piece of the refusal
	}{
		{"failover-lock-loss", scenario.ShapeSingle, "failover-lock-loss@extlock"},
		{"redlock-crash-restart", scenario.ShapeSingle, "single-instance lock, and the scenario is a Redlock topology of 5"},
		{"redlock-crash-restart", scenario.ShapeRedlock, "redlock-crash-restart@extlock"},
		{"failover-lock-loss", scenario.ShapeRedlock, "replicas that sentinels promote"},
		{"etcd-baseline", scenario.ShapeSingle, "a Redis lock, and the scenario runs etcd members"},
		{"etcd-baseline", scenario.ShapeEtcd, "etcd-baseline@extlock"},
		{"single-baseline", scenario.ShapeEtcd, "an etcd lock, and the scenario runs Redis nodes"},
		{"single-baseline", "", "single-baseline@extlock"},
		{"single-baseline", scenario.ShapeZooKeeper, "a ZooKeeper lock, and the scenario runs no ZooKeeper members"},
		{"single-baseline", "paxos", "a shape"},
	} {
		t.Run(tc.scenario+"@"+tc.shape, func(t *testing.T) {
			s, err := scenario.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			v, err := s.WithSubjectShape("external", ext, tc.shape)
			switch {
			case err != nil && (!errors.Is(err, scenario.ErrBadScenario) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %q, want one wrapping ErrBadScenario that says %q", err, tc.want)
			case err == nil && v.Name != tc.want:
				t.Fatalf("name %q, want %q", v.Name, tc.want)
			}
		})
	}
	s, _ := scenario.Lookup("single-baseline")
	if _, err := s.WithSubjectShape("redsync", nil, scenario.ShapeSingle); err == nil {
		t.Error("a shape declared for a built-in subject was taken")
	}
}

// runWith plays one trial of the built-in scenario name with the subject
// put through it; edit, if set, changes the scenario first.
func runWith(t *testing.T, name, subject string, command []string, edit func(*scenario.Scenario)) trial.TrialResult {
	t.Helper()
	testredis.Require(t, true)
	s, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.WithSubject(subject, command); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&s)
	}
	tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// noFaults drops a scenario's fault schedule, and the requirements that
// name its faults. It tolerates starvation: without its faults, a scenario
// whose holder keeps the lock for most of the trial (failover-lock-loss
// holds it 6s of 4s) starves the other client by design.
func noFaults(s *scenario.Scenario) {
	s.Faults, s.Require = nil, nil
	s.Tolerate = append(s.Tolerate, "starvation")
}

// wantSafe fails unless the trial was safe and the lock granted at least
// grants times.
func wantSafe(t *testing.T, tr trial.TrialResult, grants int) {
	t.Helper()
	if got, want := tr.Observed, string(scenario.Safe); got != want {
		t.Fatalf("observed %s, want %s; anomalies: %+v", got, want, tr.Check.Anomalies)
	}
	n := 0
	for _, g := range tr.Evidence.Grants {
		n += g
	}
	if n < grants {
		t.Errorf("only %d grants, want at least %d: the workload did not run", n, grants)
	}
}

// wantFailoverDoubleGrant fails unless the trial shows failover-lock-loss's
// violation: a lease on n1, the old master, then one on n2, the promoted
// replica, at once.
func wantFailoverDoubleGrant(t *testing.T, tr trial.TrialResult) {
	t.Helper()
	if got, want := tr.Observed, string(scenario.Unsafe); got != want {
		t.Fatalf("observed %s, want %s", got, want)
	}
	a := first(t, tr, checker.DoubleGrant)
	if len(a.Windows) != 2 || a.Windows[0].Node != "n1" || a.Windows[1].Node != "n2" {
		t.Errorf("double grant %+v, want leases on n1 (old master) then n2 (promoted replica)", a.Windows)
	}
}

// TestCatalogue_AttackMustMeetTheLock: in the scenarios whose attack is a
// kill, power loss or clock jump of the node holding the key or a pause of
// the holder, a trial in which the attack met no lock (a slow lock program
// still starting, a holder not yet granted) proves nothing: inconclusive,
// never safe. So with
// the lost-reply scenarios, whose dropped request must have run on the
// node (after: the key is read once replies flow again).
func TestCatalogue_AttackMustMeetTheLock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scenario, attack, target string
		after                    bool
	}{
		{"failover-lock-loss", "kill", "n1", false},
		{"cluster-failover-lock-loss", "kill", "n2", false},
		{"gc-pause", "pause-client", "c1", false},
		{"gc-pause-fenced", "pause-client", "c1", false},
		{"redlock-gc-pause", "pause-client", "c1", false},
		{"watchdog-pause", "pause-client", "c1", false},
		{"single-power-loss", "power-loss", "n1", false},
		{"single-clock-jump", "clock-jump", "n1", false},
		{"zk-clock-jump", "clock-jump", "z1", false},
		{"pg-clock-jump", "clock-jump", "p1", false},
		{"reentrant-lost-reply", "drop-replies", "n1", true},
		{"reply-loss", "drop-replies", "n1", true},
		{"reply-loss-release-all", "drop-replies", "n1", true},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			s, err := scenario.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			// Two grants one after the other, and every step fired with
			// its effect; the attack found the key absent.
			const sec = int64(1e9)
			var h checker.History
			for i, p := range []int{1, 2} {
				at := int64(i+1) * sec
				h = append(h, checker.Event{Index: len(h), Process: p, Type: checker.Invoke, F: checker.FAcquire, Key: "lock", Time: at},
					checker.Event{Index: len(h) + 1, Process: p, Type: checker.OK, F: checker.FAcquire, Key: "lock", Time: at + 1e7, ValidUntil: at + sec/2, Node: "n1"})
			}
			fired := 0.3
			var faults []evidence.Fault
			for i, st := range s.Faults {
				f := evidence.Fault{Step: i, Fault: st.Fault, Target: st.Node, Desc: st.Fault, Fired: &fired, Effect: "seen"}
				switch {
				case st.Fault == tc.attack && tc.after:
					f.Target, f.KeyAfter = tc.target, evidence.KeyAbsent
				case st.Fault == tc.attack:
					f.Target, f.KeyBefore = tc.target, evidence.KeyAbsent
				}
				faults = append(faults, f)
			}
			r := checker.Check(h, trial.CheckOptions(s))
			ev := evidence.Evaluate(evidence.Input{History: h, Result: r, Faults: faults, Require: s.Require})
			o := judge.Trial(s.Rules(), r, ev)
			obs, why := o.Observed, o.Reason
			want := "key held when it hit"
			if tc.after {
				want = "key held after it"
			}
			if obs != evidence.Inconclusive || !strings.Contains(why, want) {
				t.Errorf("observed %s (%s); want inconclusive: the %s met no lock", obs, why, tc.attack)
			}
		})
	}
}
