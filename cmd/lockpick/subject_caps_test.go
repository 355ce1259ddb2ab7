package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/scenario"
)

const pylock = "../../examples/pylock/pylock.py"

// TestList_Subject: `lockpick list` with a subject says, before anything
// runs, which attacks the lock will meet, why it is skipped from the
// others, and what it runs without; scenarios of another shape are left
// out of the count.
func TestList_Subject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--subject-cmd", pylock, "--subject-shape", "single", "--subject-caps", "block,renew,fence"}, []string{
			"pylock.py meets 33 of 38 scenarios of its shape; the 42 of another shape are left out of the count",
			"failover-wait-replica           met          runs without wait_replicas (a setting of lockpick's set-nx)",
			"naive-setnx-expire-crash        skipped      the scenario's lock sets crash_after_setnx",
			"redlock-baseline                other shape  it is a single-instance lock"}},
		{[]string{"--subject-cmd", pylock, "--subject-shape", "etcd", "--subject-caps", "none"}, []string{
			"pylock.py meets 6 of 9 scenarios of its shape",
			"etcd-pause-holder               met          runs without acquire: block (your lock does not declare block",
			"etcd-partition-holder           skipped      the scenario attacks a lock that renews its lease"}},
		{[]string{"--subject-cmd", pylock}, []string{"pylock.py meets 75 of 80 scenarios (it declares no shape"}},
		{[]string{"--subject", "redsync", "--suite", "ci"}, []string{"redsync meets "}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, stderr := lockpick(t, append([]string{"list"}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output without %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestSubjectCaps_UsageErrors: --subject-caps goes with --subject-cmd, and
// names known capabilities.
func TestSubjectCaps_UsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "--subject-caps", "block"}, "list: --subject-caps declares what a --subject-cmd program does"},
		{[]string{"list", "--subject-cmd", pylock, "--subject-caps", "fense"}, `list: --subject-caps: capability "fense": unknown (did you mean "fence"?)`},
		{[]string{"run", "single-baseline", "--subject", "redsync", "--subject-caps", "block"}, "run: --subject-caps declares"},
		{[]string{"explore", "single-baseline", "--subject-cmd", pylock, "--subject-caps", "block,block"}, "listed twice"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := lockpick(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}

// TestApplySubject_Caps: the declared caps reach the scenarios run, and a
// run says which settings of lockpick's lock each runs without.
func TestApplySubject_Caps(t *testing.T) {
	t.Parallel()
	var list []scenario.Scenario
	for _, n := range []string{"watchdog-pause", "gc-pause-fenced"} {
		s, err := scenario.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, s)
	}
	run, skipped, err := applySubjectSpec(list, subjectSpec{cmd: pylock, shape: "single", caps: "renew"})
	if err != nil {
		t.Fatal(err)
	}
	if len(run) != 1 || len(skipped) != 1 || run[0].Lock.Caps[0] != "renew" || !strings.Contains(skipped[0].Skipped, "no fencing token") {
		t.Fatalf("ran %d, skipped %+v; want watchdog-pause run with caps [renew], gc-pause-fenced skipped for fencing", len(run), skipped)
	}
	var buf bytes.Buffer
	printDropped(&buf, run)
	if got, want := buf.String(), "watchdog-pause@pylock.py: runs without stop_renewing_on_error (a setting of lockpick's reentrant lock)\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
