package trial_test

import (
	"strings"
	"testing"

	"github.com/lockpick/lockpick/internal/testetcd"
)

// TestAim_EtcdLeaderAndFollower pauses @follower briefly (shorter than an
// election timeout, so the leader stays), then kills @leader: both resolve
// to members when they fire, the kill to another member than the pause,
// and both take effect.
func TestAim_EtcdLeaderAndFollower(t *testing.T) {
	testetcd.Require(t)
	fs := aimedTrial(t, `name: aim-etcd
expect: safe
topology: {etcd: 3}
lock: {kind: etcd-mutex, ttl: 2s, acquire: block}
clients: 2
hold: 100ms
duration: 3s
faults:
  - {at: 300ms, fault: pause, node: '@follower', for: 300ms}
  - {at: 1200ms, fault: kill, node: '@leader', for: 1s}
require:
  - {grants: 1}
`).Faults
	for i, aim := range []string{"@follower", "@leader"} {
		f := fs[i]
		if f.Aim != aim || !strings.HasPrefix(f.Target, "e") || f.Error != "" || f.Effect == "" {
			t.Errorf("fault aimed at %s: %+v, want a member with an effect", aim, f)
		}
		if !strings.Contains(f.Desc, "("+aim+")") {
			t.Errorf("fault description %q does not say it was aimed at %s", f.Desc, aim)
		}
	}
	if fs[0].Target == fs[1].Target {
		t.Errorf("@follower and then @leader both resolved to %s", fs[0].Target)
	}
}

// TestAim_EtcdFollowerMidElection aims @follower 200ms after the leader was
// killed, well inside the 1s election timeout: no member calls itself
// leader then, so every running member is a follower, and the step says so
// rather than finding no target.
func TestAim_EtcdFollowerMidElection(t *testing.T) {
	testetcd.Require(t)
	fs := aimedTrial(t, `name: aim-etcd-no-leader
expect: safe
topology: {etcd: 3}
lock: {kind: etcd-mutex, ttl: 2s, acquire: block}
clients: 1
hold: 100ms
duration: 2500ms
faults:
  - {at: 300ms, fault: kill, node: '@leader', for: 1s}
  - {at: 500ms, fault: pause, node: '@follower', for: 300ms}
require:
  - {grants: 1}
`).Faults
	f := fs[1]
	if !strings.HasPrefix(f.Target, "e") || f.Target == fs[0].Target || f.Error != "" || f.Effect == "" {
		t.Errorf("@follower mid-election: %+v, want a running member with an effect (the leader %s was killed)", f, fs[0].Target)
	}
	if !strings.Contains(f.Desc, "no leader now") {
		t.Errorf("fault description %q does not say there was no leader", f.Desc)
	}
}
