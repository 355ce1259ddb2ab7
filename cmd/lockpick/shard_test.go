package main

import (
	"os"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/results"
)

func TestShardFlags_Resolve(t *testing.T) {
	for _, tc := range []struct {
		name      string
		f         shardFlags
		env       map[string]string
		want      results.Shard
		wantError string
	}{
		{name: "none", want: results.Shard{}},
		{name: "flag", f: shardFlags{shard: "2/4"}, want: results.Shard{Index: 2, Count: 4}},
		{name: "one of one is whole", f: shardFlags{shard: "1/1"}, want: results.Shard{}},
		{name: "env", env: map[string]string{"LOCKPICK_SHARD": "3/4"}, want: results.Shard{Index: 3, Count: 4}},
		{name: "flag over env", f: shardFlags{shard: "1/2"}, env: map[string]string{"LOCKPICK_SHARD": "3/4"}, want: results.Shard{Index: 1, Count: 2}},
		{name: "kubernetes index is 0-based", f: shardFlags{shards: 4}, env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, want: results.Shard{Index: 1, Count: 4}},
		{name: "last kubernetes index", f: shardFlags{shards: 4}, env: map[string]string{"JOB_COMPLETION_INDEX": "3"}, want: results.Shard{Index: 4, Count: 4}},
		{name: "index past the count", f: shardFlags{shards: 4}, env: map[string]string{"JOB_COMPLETION_INDEX": "4"}, wantError: "between 1 and"},
		{name: "shards without index", f: shardFlags{shards: 4}, wantError: "needs --shard"},
		{name: "shard not of shards", f: shardFlags{shard: "2/3", shards: 4}, wantError: "not one of --shards 4"},
		{name: "zero index", f: shardFlags{shard: "0/4"}, wantError: "between 1 and"},
		{name: "zero of zero", f: shardFlags{shard: "0/0"}, wantError: "between 1 and"},
		{name: "zero of zero in env", env: map[string]string{"LOCKPICK_SHARD": "0/0"}, wantError: "between 1 and"},
		{name: "garbage", f: shardFlags{shard: "two"}, wantError: "want i/n"},
		{name: "bad env", env: map[string]string{"LOCKPICK_SHARD": "5/4"}, wantError: "$LOCKPICK_SHARD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("LOCKPICK_SHARD", "")
			t.Setenv("JOB_COMPLETION_INDEX", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			got, err := tc.f.resolve()
			switch {
			case tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)):
				t.Errorf("err = %v, want one with %q", err, tc.wantError)
			case tc.wantError == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.wantError == "" && got != tc.want:
				t.Errorf("shard = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMerge_NotAShardIsUsageError(t *testing.T) {
	code, _, stderr := lockpick(t, "merge", t.TempDir(), "--out", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "not a shard") {
		t.Errorf("exit %d, stderr %q; want %d naming a folder that is not a shard", code, stderr, exitUsage)
	}
}

func TestRun_BadShardIsUsageError(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "single-baseline", "--shard", "5/4"}, "5/4"},
		{[]string{"run", "single-baseline", "--trials", "2", "--shard", "3/4"}, "would have no trial"},
		{[]string{"compare", "reply-loss", "--trials", "3", "--shards", "4", "--shard", "1/4"}, "would have no trial"},
	} {
		out := t.TempDir()
		code, _, stderr := lockpick(t, append(tc.args, "--out", out)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d with %q", tc.args, code, stderr, exitUsage, tc.want)
		}
		if entries, _ := os.ReadDir(out); len(entries) > 0 {
			t.Errorf("%v left %d entries in the results folder", tc.args, len(entries))
		}
	}
}
