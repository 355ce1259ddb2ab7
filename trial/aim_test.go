package trial_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// aimedTrial runs one trial of the scenario file yaml, whose two faults
// are aimed, and returns its evidence.
func aimedTrial(t *testing.T, yaml string) evidence.Evidence {
	t.Helper()
	s, err := scenario.Parse("aim.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trial.RunTrial(context.Background(), s, 1, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Evidence.Faults) != 2 {
		t.Fatalf("%d faults in the evidence, want 2", len(tr.Evidence.Faults))
	}
	return tr.Evidence
}

// TestAim_FollowsFailover aims at the master, fails it over, then aims at
// the replica: the targets follow the sentinels, and a fault on the
// replication link goes to a node that has one (the demoted master
// replicates without a proxy), so it fires instead of failing; as n2 now
// replicates through nothing, its effect check says so.
func TestAim_FollowsFailover(t *testing.T) {
	testredis.Require(t, true)
	ev := aimedTrial(t, `name: aim
expect: safe
topology: {masters: 1, replicas: 1, sentinels: 3, down_after: 400ms}
lock: {kind: set-nx, ttl: 2s, retry_delay: 50ms}
clients: 2
hold: 50ms
duration: 2500ms
faults:
  - {at: 200ms, fault: sentinel-failover, node: '@master'}
  - {at: 1500ms, fault: cut-replication, node: '@replica', for: 300ms}
require:
  - {grants: 0}
  - {fault: sentinel-failover, node: '@master', key_before: held}
`)
	fs := ev.Faults
	if fs[0].Target != "n1" || fs[0].Error != "" || fs[0].Effect == "" || fs[0].Effective == nil {
		t.Fatalf("failover of @master: %+v, want n1 failed over with an effect", fs[0])
	}
	// The requirement on @master is checked against the fault aimed there,
	// whose key on n1 was read before it fired (whether client 1 or 2 held
	// the lock then is chance).
	if fs[0].Aim != "@master" || fs[0].KeyBefore == "" || fs[1].KeyBefore == "" {
		t.Fatalf("key before the failover %q (aimed %q) and the cut %q, want both read", fs[0].KeyBefore, fs[0].Aim, fs[1].KeyBefore)
	}
	req := ev.Required[1]
	if want := "key " + fs[0].KeyBefore + " when it hit"; !strings.HasPrefix(req.Found, want) || req.Met != (fs[0].KeyBefore == "held") {
		t.Fatalf("requirement on @master: %+v, want found %q", req, want)
	}
	// No node replicates right after the failover (n2 is master, n1 not yet
	// a replica), so @replica falls back to n2, the only node with a
	// replication proxy; n2 replicates through nothing, and the cut says
	// it had no effect rather than claim one.
	if fs[1].Target != "n2" || fs[1].Error != "" || fs[1].HealError != "" || fs[1].Effect != "" || fs[1].NoEffect == "" {
		t.Fatalf("cut-replication of @replica after the failover: %+v, want n2 cut, with no effect", fs[1])
	}
}
