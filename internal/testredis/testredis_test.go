package testredis

import (
	"errors"
	"testing"
)

func TestDecide(t *testing.T) {
	has := func(progs ...string) func(string) (string, error) {
		return func(p string) (string, error) {
			for _, q := range progs {
				if p == q {
					return "/usr/bin/" + p, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	for _, tc := range []struct {
		name     string
		look     func(string) (string, error)
		env      string
		sentinel bool
		missing  string
		fail     bool
	}{
		{"both there", has("redis-server", "redis-sentinel"), "", true, "", false},
		{"server only, no sentinel needed", has("redis-server"), "1", false, "", false},
		{"no sentinel: skip", has("redis-server"), "", true, "redis-sentinel", false},
		{"no server: skip", has(), "0", false, "redis-server", false},
		{"no server, required: fail", has(), "1", false, "redis-server", true},
		{"no sentinel, required: fail", has("redis-server"), "1", true, "redis-sentinel", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missing, fail := decide(tc.look, tc.env, tc.sentinel)
			if missing != tc.missing || fail != tc.fail {
				t.Errorf("decide = %q, %v; want %q, %v", missing, fail, tc.missing, tc.fail)
			}
		})
	}
}
