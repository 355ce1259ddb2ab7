package scenario_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/scenario"
)

// goWords are what a message must not show a user: YAML tags, Go types,
// package prefixes and the decoder's own words.
var goWords = regexp.MustCompile(`!!|scenario\.|\[\]|\b(int|int64|string|float64|bool|map)\b|\bmap\[|unmarshal|yaml:|cluster:|faults:|\bGo\b|EOF`)

// TestParse_StrictValues: a value out of range or of the wrong type is a
// file error at its line, naming its field as the file writes it, in
// plain words; no default replaces a value the file wrote.
func TestParse_StrictValues(t *testing.T) {
	const head = "name: x\nexpect: safe\n"
	for _, tc := range []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"ttl 0", head + "lock:\n  ttl: 0s\n", 4, "lock.ttl", "must be above 0, not 0s (leave it out for the default, 2s)"},
		{"ttl negative", head + "lock:\n  ttl: -1s\n", 4, "lock.ttl", "must be above 0, not -1s"},
		{"hold negative", head + "hold: -300ms\n", 3, "hold", "must be above 0, not -300ms"},
		{"hold 0", head + "hold: 0s\n", 3, "hold", "must be above 0, not 0s (leave it out for the default, 100ms)"},
		{"hold empty", head + "hold:\n", 3, "hold", "must be above 0, not nothing"},
		{"hold without unit", head + "hold: 5\n", 3, "hold", "must be a duration with its unit, like 5s or 5ms, not 5"},
		{"clients negative", head + "clients: -1\n", 3, "clients", "must be a positive whole number, not -1"},
		{"clients 0", head + "clients: 0\n", 3, "clients", "must be at least 1, not 0"},
		{"clients fraction", head + "clients: 2.5\n", 3, "clients", `must be a whole number, not "2.5"`},
		{"clients words", head + "clients: two\n", 3, "clients", `must be a whole number, not "two"`},
		{"clients quoted", head + "clients: \"3\"\n", 3, "clients", `must be a whole number, not "3"`},
		{"duration negative", head + "duration: -5s\nisolate: [1]\nfaults:\n  - {at: 0s, fault: pause-client, client: 1, for: 3s}\n", 3, "duration", "must be above 0, not -5s"},
		{"duration 0", head + "duration: 0s\n", 3, "duration", "must be above 0"},
		{"start_after negative", head + "start_after: -1s\n", 3, "start_after", "must be 0 or more, not -1s"},
		{"stagger negative", head + "stagger: -10ms\n", 3, "stagger", "must be 0 or more, not -10ms"},
		{"align_start negative", head + "align_start: -1s\n", 3, "align_start", "between 0 and 1m"},
		{"cycles negative", head + "cycles: [1, -1]\n", 3, "cycles[1]", "must be 0 (no limit) or more, not -1"},
		{"retry_delay 0", head + "lock: {retry_delay: 0s}\n", 3, "lock.retry_delay", "leave it out for the default, 50ms"},
		{"retry_delay negative", head + "lock: {retry_delay: -1ms}\n", 3, "lock.retry_delay", "must be above 0, not -1ms"},
		{"kind empty", head + "lock: {kind: \"\"}\n", 3, "lock.kind", `must not be empty, not "" (leave it out for the default, set-nx)`},
		{"key empty", head + "lock: {key: \"\"}\n", 3, "lock.key", "must not be empty"},
		{"name empty", "name: \"\"\nexpect: safe\n", 1, "name", "must not be empty"},
		{"wait_timeout 0", head + "topology: {replicas: 1}\nlock: {wait_replicas: 1, wait_timeout: 0s}\n", 4, "lock.wait_timeout", "leave it out for the default, 100ms"},
		{"wait_timeout negative", head + "topology: {replicas: 1}\nlock: {wait_replicas: 1, wait_timeout: -1s}\n", 4, "lock.wait_timeout", "must be 0 or more, not -1s"},
		{"wait_replicas negative", head + "lock: {wait_replicas: -1}\n", 3, "lock.wait_replicas", "must be 0 or more"},
		{"lock node_timeout negative", head + "topology: {masters: 3}\nlock: {kind: redlock, node_timeout: -5ms}\n", 4, "lock.node_timeout", "must be 0 or more, not -5ms"},
		{"lock node_timeout 0", head + "topology: {masters: 3}\nlock: {kind: redlock, node_timeout: 0s}\n", 4, "lock.node_timeout", "leave it out for the default, the lock's own"},
		{"drift_factor 0", head + "topology: {masters: 3}\nlock: {kind: redlock, drift_factor: 0}\n", 4, "lock.drift_factor", "leave it out for the default, 0.01"},
		{"drift_factor words", head + "lock: {kind: redlock, drift_factor: lots}\n", 3, "lock.drift_factor", `must be a number, not "lots"`},
		{"tries negative", head + "topology: {masters: 3}\nlock: {kind: redlock, acquire: block, tries: -1}\n", 4, "lock.tries", "must be 0 (no limit) or more"},
		{"masters 0", head + "topology: {masters: 0}\n", 3, "topology.masters", "must be at least 1, not 0"},
		{"replicas negative", head + "topology: {replicas: -1}\n", 3, "topology.replicas", "must be 0 or more, not -1"},
		{"down_after 0", head + "topology: {replicas: 1, sentinels: 3, down_after: 0s}\n", 3, "topology.down_after", "leave it out for the default, 500ms"},
		{"down_after negative", head + "topology: {replicas: 1, sentinels: 3, down_after: -1s}\n", 3, "topology.down_after", "must be 0 or more"},
		{"fenced words", head + "fenced: maybe\n", 3, "fenced", `must be true or false, not "maybe"`},
		{"lock a word", head + "lock: set-nx\n", 3, "lock", `must be a mapping of fields, like {kind: set-nx, ttl: 2s}, not "set-nx"`},
		{"faults a mapping", head + "faults:\n  at: 1s\n  fault: kill\n", 4, "faults", "must be a list of faults, each like {at: 1s, fault: kill, node: n1}, not a mapping"},
		{"tolerate a word", head + "tolerate: stuck-lock\n", 3, "tolerate", `must be a list of anomaly kinds, like [stuck-lock], not "stuck-lock"`},
		{"command a word", head + "lock: {kind: external, command: mylock}\n", 3, "lock.command", "must be a list of words, the program and its arguments"},
		{"isolate words", head + "isolate: [one]\n", 3, "isolate[0]", `must be a whole number, not "one"`},
		{"clock_skew word", head + "lock: {clock_skew: [0s, soon]}\n", 3, "lock.clock_skew[1]", `must be a duration like 500ms or 2s, not "soon"`},
		{"at negative", head + "faults:\n  - {at: -1s, fault: kill, node: n1}\n", 4, "faults[0].at", "must be 0 or more, not -1s"},
		{"jitter negative", head + "faults:\n  - {at: 1s, jitter: -1s, fault: kill, node: n1}\n", 4, "faults[0].jitter", "must be 0 or more"},
		{"for negative", head + "faults:\n  - {at: 1s, fault: kill, node: n1,\n     for: -3s}\n", 5, "faults[0].for", "must be 0 or more, not -3s"},
		{"within negative", head + "faults:\n  - {at: 1s, when: {event: granted, client: 1}, within: -1s, fault: kill, node: n1}\n", 4, "faults[0].within", "must be 0 or more"},
		{"at a word", head + "faults:\n  - {at: soon, fault: kill, node: n1}\n", 4, "faults[0].at", `must be a duration like 500ms or 2s, not "soon"`},
		{"when client a word", head + "faults:\n  - {at: 1s, when: {event: granted, client: two}, fault: kill, node: n1}\n", 4, "faults[0].when.client", `must be a whole number, not "two"`},
		{"params on pause-client", head + "isolate: [1]\nfaults:\n  - fault: pause-client\n    client: 1\n    params: {delay: 3s}\n", 7, "faults[0].params.delay", `unknown parameter "delay": pause-client takes none`},
		{"params on kill", head + "faults:\n  - {at: 1s, fault: kill, node: n1, params: {delay: 3s}}\n", 4, "faults[0].params.delay", `unknown parameter "delay": kill takes none`},
		{"params a list", head + "faults:\n  - {at: 1s, fault: restart, node: n1, params: [delay]}\n", 4, "faults[0].params", "must be a mapping, like {delay: 3s}, not a list"},
		{"param duration a word", head + "faults:\n  - {at: 1s, fault: restart, node: n1, params: {delay: soon}}\n", 4, "faults[0].params.delay", `must be a duration like 500ms or 2s, not "soon"`},
		{"param duration negative", head + "faults:\n  - {at: 1s, fault: restart, node: n1, params: {delay: -1s}}\n", 4, "faults[0].params.delay", "must be 0 or more, not -1s"},
		{"param timeout 0", head + "topology: {replicas: 1, sentinels: 3}\nfaults:\n  - {at: 1s, fault: sentinel-failover, node: n1, params: {timeout: 0s}}\n", 5, "faults[0].params.timeout", "must be above 0"},
		{"param bool a word", head + "faults:\n  - {at: 1s, fault: partition, node: n1, params: {refuse: maybe}}\n", 4, "faults[0].params.refuse", `must be true or false, not "maybe"`},
		{"param text a number", head + "faults:\n  - {at: 1s, fault: partition, node: n1, params: {direction: 3}}\n", 4, "faults[0].params.direction", "must be text, not 3"},
		{"client on a node fault", head + "faults:\n  - {at: 1s, fault: kill, node: n1, client: 2}\n", 4, "faults[0].client", "only pause-client and kill-client act on a client"},
		{"node on a client fault", head + "isolate: [1]\nfaults:\n  - {at: 1s, fault: pause-client, client: 1, node: n1}\n", 5, "faults[0].node", `drop node "n1"`},
		{"require min 0", head + "require:\n  - {refused: acquire, min: 0}\n", 4, "require[0].min", "must be at least 1"},
		{"require grants a word", head + "require:\n  - {grants: many}\n", 4, "require[0].grants", `must be a whole number, not "many"`},
		{"explore max_faults 0", head + "explore: {max_faults: 0}\n", 3, "explore.max_faults", "leave it out for the default, 4"},
		{"explore hold a word", head + "explore: {hold: 1s}\n", 3, "explore.hold", `must be a list of two durations, like [100ms, 1s], not "1s"`},
		{"arm ttl 0", head + "arms:\n  - name: a\n    lock: {ttl: 0s}\n", 5, "arms[0].lock.ttl", "must be above 0, not 0s"},
		{"arm ttl negative", head + "arms:\n  - name: a\n    expect: safe\n    lock:\n      ttl: -1s\n", 7, "arms[0].lock.ttl", "must be above 0, not -1s"},
		{"arm clients a word", head + "arms:\n  - name: a\n    clients: two\n", 5, "arms[0].clients", `must be a whole number, not "two"`},
		{"arm for negative", head + "arms:\n  - name: a\n    faults:\n      - {at: 1s, fault: kill, node: n1, for: -1s}\n", 6, "arms[0].faults[0].for", "must be 0 or more"},
		{"arm a word", head + "arms: [fix]\n", 3, "arms[0]", `an arm must be a mapping with a name, like {name: fix, expect: safe}, not "fix"`},
		{"arms a mapping", head + "arms: {name: fix}\n", 3, "arms", "must be a list of arms"},
		{"empty file", "", 0, "", "the file is empty"},
		{"comments only", "# nothing yet\n", 0, "", "the file is empty"},
		{"a list", "- name: x\n", 1, "", "a scenario file is a mapping of fields (name:, expect:, lock:, ...), not a list"},
		{"missing program path", head + "lock: {kind: external, command: [/nonexistent/mylock, -v]}\n", 3, "lock.command", "no program /nonexistent/mylock: not a file"},
		{"missing program name", head + "lock: {kind: external, command: [no-such-lockpick-subject]}\n", 3, "lock.command", `no program "no-such-lockpick-subject" on PATH`},
		{"missing program of an arm", head + "lock: {kind: external, command: [sh]}\narms:\n  - name: a\n    lock:\n      command: [/nonexistent/mylock]\n", 7, "arms[0].lock.command", "no program /nonexistent/mylock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenario.Parse("mine.yaml", []byte(tc.yaml))
			var fe *scenario.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *FileError", err)
			}
			if !errors.Is(err, scenario.ErrBadScenario) {
				t.Errorf("err does not wrap ErrBadScenario")
			}
			if fe.Line != tc.line || fe.Field != tc.field {
				t.Errorf("at line %d, field %q; want line %d, field %q (%v)", fe.Line, fe.Field, tc.line, tc.field, err)
			}
			if !strings.Contains(fe.Msg, tc.msg) {
				t.Errorf("error %q, want %q", err, tc.msg)
			}
			if w := goWords.FindString(fe.Msg); w != "" {
				t.Errorf("error %q shows the user %q", err, w)
			}
		})
	}
}

// A value the file writes stays as written; a field it leaves out takes
// its default. A zero in an arm puts a field whose zero is the lock's own
// default back (the catalogue's multilock arms drop node_timeout so).
func TestParse_WrittenValuesStay(t *testing.T) {
	s, err := scenario.Parse("mine.yaml", []byte(`name: x
expect: safe
clients: 3
hold: 1ms
topology: {masters: 3}
lock: {kind: redlock, ttl: 3s, node_timeout: 20ms}
faults:
  - {at: 1s, fault: restart, node: n1, params: {delay: 0s}}
arms:
  - name: multilock
    expect: safe
    lock: {kind: multilock, node_timeout: 0s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Clients != 3 || s.Hold.D() != time.Millisecond || s.Lock.TTL.D() != 3*time.Second {
		t.Errorf("clients %d, hold %v, ttl %v; want 3, 1ms, 3s as written", s.Clients, s.Hold.D(), s.Lock.TTL.D())
	}
	if s.Duration.D() != 2*time.Second || s.Lock.RetryDelay.D() != 50*time.Millisecond {
		t.Errorf("duration %v, retry_delay %v; want the defaults 2s, 50ms", s.Duration.D(), s.Lock.RetryDelay.D())
	}
	a, err := s.Arm("multilock")
	if err != nil || a.Lock.NodeTimeout != 0 {
		t.Errorf("arm: node_timeout %v, err %v; want 0", a.Lock.NodeTimeout.D(), err)
	}
}

// WithDefaults fills zeros, the settings left out, and leaves a negative
// value for Validate to refuse.
func TestScenario_WithDefaultsKeepsNegatives(t *testing.T) {
	s := scenario.Scenario{Expect: scenario.Safe, Clients: -1, Hold: -1}.WithDefaults()
	if s.Clients != -1 || s.Hold != -1 {
		t.Fatalf("clients %d, hold %v: a negative value was replaced", s.Clients, s.Hold.D())
	}
	if err := s.Validate(); !errors.Is(err, scenario.ErrBadScenario) {
		t.Errorf("Validate() = %v, want a bad scenario", err)
	}
}

// Every example scenario file loads.
func TestExamples_Load(t *testing.T) {
	files, _ := filepath.Glob("../examples/scenarios/*.yaml")
	if len(files) == 0 {
		t.Skip("no examples/scenarios beside the package")
	}
	for _, f := range files {
		if _, err := scenario.LoadFile(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// A program found on PATH, or by its path, passes.
func TestParse_ProgramFound(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "mylock")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"[sh, -c, 'exit 0']", "[" + prog + "]"} {
		if _, err := scenario.Parse("mine.yaml", []byte("name: x\nexpect: safe\nlock: {kind: external, command: "+cmd+"}\n")); err != nil {
			t.Errorf("command %s: %v", cmd, err)
		}
	}
	if err := os.Chmod(prog, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := scenario.Parse("mine.yaml", []byte("name: x\nexpect: safe\nlock: {kind: external, command: ["+prog+"]}\n"))
	if err == nil || !strings.Contains(err.Error(), "not an executable file") {
		t.Errorf("a file that is not executable: err = %v", err)
	}
}
