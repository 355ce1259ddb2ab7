package subject

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/internal/testredis"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// extConfig is client p's config for the external subject argv, on view.
func extConfig(tb testing.TB, view View, p int, argv ...string) Config {
	tgt := NewTarget(view)
	tb.Cleanup(tgt.Close)
	return Config{Lock: scenario.Lock{Kind: "external", Key: "lock", TTL: scenario.Duration(2 * time.Second), Command: argv}, Process: p, Target: tgt}
}

// noRedis is a view for fake programs, which never dial.
var noRedis = View{Nodes: []NodeAddr{{Name: "n1", Addr: "127.0.0.1:1"}}}

// external starts nothing yet: the program runs on the first call.
func external(tb testing.TB, c Config) *externalSubject {
	s := New(c).(*externalSubject)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// gone reports whether, within a second, no live process is left in the
// program's process group (a killed child may linger as a zombie until
// init reaps it).
func gone(s *externalSubject) bool {
	pgid := s.cmd.Process.Pid
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		live := len(groupPIDs(pgid)) > 0
		if !live || time.Now().After(deadline) {
			return !live
		}
	}
}

// startRedis starts one Redis node for the test and returns its view.
func startRedis(tb testing.TB) View {
	tb.Helper()
	return ViewOf(testredis.StartOne(tb))
}

func TestExternalSubject_Extlock(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "extlock")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lockpick/lockpick/examples/extlock").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/extlock: %v\n%s", err, out)
	}
	view := startRedis(t)
	ctx := context.Background()
	a, b := external(t, extConfig(t, view, 1, bin)), external(t, extConfig(t, view, 2, bin))

	before := time.Now()
	g, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.Token == "" || g.Node != "n1" || !g.ValidUntil.After(before) || g.ValidUntil.After(time.Now().Add(2*time.Second)) {
		t.Errorf("grant %+v: want a token, node n1, and a deadline within the 2s TTL", g)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, lockcore.ErrNotAcquired) || Outcome(err) != checker.Fail {
		t.Errorf("second client's acquire: %v, want ErrNotAcquired, recorded as fail", err)
	}
	ext, err := a.Extend(ctx)
	if err != nil || !ext.ValidUntil.After(g.ValidUntil) || ext.Token != g.Token {
		t.Errorf("extend: %+v, %v; want the same token and a later deadline than %v", ext, err, g.ValidUntil)
	}
	if node, err := a.Release(ctx); err != nil || node != "n1" {
		t.Errorf("release: %q, %v", node, err)
	}
	if _, err := a.Release(ctx); !errors.Is(err, lockcore.ErrReleased) {
		t.Errorf("second release: %v, want ErrReleased", err)
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Errorf("acquire after the release: %v", err)
	}
	if err := b.Close(); err != nil || !gone(b) {
		t.Errorf("Close: %v; program gone: %v", err, gone(b))
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestExternalSubject_Replies(t *testing.T) {
	t.Parallel()
	// Each fake answers every request with reply, its id filled in.
	for _, tc := range []struct {
		name, reply string
		want        checker.Type
		is          error
		says        string // the error as recorded: in the program's words, under its name
	}{
		{"no", `"ok":false,"error":"taken"`, checker.Fail, lockcore.ErrNotAcquired, "sh: taken"},
		{"unknown", `"ok":false,"unknown":true,"error":"i/o timeout"`, checker.Info, nil, "sh: i/o timeout (outcome unknown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := external(t, extConfig(t, noRedis, 1, "sh", "-c",
				`while read -r l; do id=${l#*\"id\":}; printf '{"id":%s,`+tc.reply+`}\n' "${id%%,*}"; done`))
			_, err := s.Acquire(context.Background())
			if got := Outcome(err); got != tc.want || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("acquire: %v, recorded as %s; want %s", err, got, tc.want)
			}
			if err == nil || err.Error() != tc.says {
				t.Errorf("acquire error %q, want %q", err, tc.says)
			}
		})
	}
}

func TestExternalSubject_LateReply(t *testing.T) {
	t.Parallel()
	// Replies 300ms late, with a token naming the request.
	s := external(t, extConfig(t, noRedis, 1, "sh", "-c",
		`while read -r l; do id=${l#*\"id\":}; id=${id%%,*}; sleep 0.3; printf '{"id":%s,"ok":true,"token":"t%s"}\n' "$id" "$id"; done`))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(ctx); Outcome(err) != checker.Info {
		t.Fatalf("acquire cut short: %v, want an unknown outcome", err)
	}
	g, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Token, "t2"; got != want {
		t.Errorf("token %q, want %q: the late reply to the first request was taken for the second's", got, want)
	}
}

func TestExternalSubject_Exits(t *testing.T) {
	t.Parallel()
	s := external(t, extConfig(t, noRedis, 1, "sh", "-c", "exit 3"))
	for i := range 2 {
		if _, err := s.Acquire(context.Background()); !errors.Is(err, errExited) {
			t.Errorf("acquire %d: %v, want errExited", i+1, err)
		}
	}
	s = external(t, extConfig(t, noRedis, 1, "/no/such/program"))
	if _, err := s.Acquire(context.Background()); err == nil || Outcome(err) != checker.Fail {
		t.Errorf("acquire with a missing program: %v, want a failure", err)
	}
}

func TestExternalSubject_CloseKillsWhatItStarted(t *testing.T) {
	t.Parallel()
	// Never replies, and leaves a child behind that holds its stdout.
	s := external(t, extConfig(t, noRedis, 1, "sh", "-c", "sleep 30 & exec cat >/dev/null"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(ctx); Outcome(err) != checker.Info {
		t.Fatalf("acquire: %v, want an unknown outcome", err)
	}
	began := time.Now()
	_ = s.Close()
	if took := time.Since(began); took > closeGrace+time.Second {
		t.Errorf("Close took %v, want at most %v", took, closeGrace+time.Second)
	}
	if !gone(s) {
		t.Error("the program's child outlived Close")
	}
}

// TestServed_Outcome: after an attempt that may have run, a certain failure
// of a cluster call is recorded as unknown; without one, or outside a
// cluster, it stays certain.
func TestServed_Outcome(t *testing.T) {
	tgt := NewTarget(View{Cluster: true, Nodes: []NodeAddr{{Name: "n1", Addr: "a1", Announced: "p1"}}})
	cfg := Config{Target: tgt}
	_, sv := cfg.Served(context.Background(), "")
	refused := fmt.Errorf("%w: held", lockcore.ErrNotAcquired)
	if err := sv.Outcome("acquire", "lock", refused); lockcore.MayHaveRun(err) {
		t.Fatalf("a refusal with no uncertain attempt became %v", err)
	}
	servedHook{addr: "p1"}.note(context.WithValue(context.Background(), servedKey{}, sv.s), redis.NewCmd(context.Background(), "evalsha"), context.DeadlineExceeded)
	err := sv.Outcome("acquire", "lock", refused)
	if !lockcore.MayHaveRun(err) {
		t.Fatalf("a refusal after a timed-out attempt stayed certain: %v", err)
	}
	if sv.Node() != "n1" {
		t.Fatalf("node %q, want n1", sv.Node())
	}
	servedHook{addr: "p1"}.note(context.WithValue(context.Background(), servedKey{}, sv.s), redis.NewCmd(context.Background(), "cluster", "slots"), context.DeadlineExceeded)
	_, plain := Config{Target: NewTarget(View{})}.Served(context.Background(), "n1")
	if err := plain.Outcome("acquire", "lock", refused); lockcore.MayHaveRun(err) || plain.Node() != "n1" {
		t.Fatalf("outside a cluster: %v, %q", err, plain.Node())
	}
}

// replier answers every request ok, with a token naming the request.
const replier = `while read -r l; do id=${l#*\"id\":}; id=${id%%,*}; printf '{"id":%s,"ok":true,"token":"t%s"}\n' "$id" "$id"; done`

func TestExternalSubject_WarmUp(t *testing.T) {
	t.Parallel()
	// It takes two seconds to start, as a JVM does; the warm-up waits for it.
	s := external(t, extConfig(t, noRedis, 1, "sh", "-c", "sleep 2; "+replier))
	if err := s.WarmUp(context.Background()); err != nil {
		t.Fatalf("warm-up of a program that starts in 1s: %v", err)
	}
	began := time.Now()
	if _, err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("first acquire after the warm-up took %v: the program was not up", took)
	}
	_ = s.Close()
	if err := s.Health(); err != nil {
		t.Errorf("health: %v", err)
	}

	gone := external(t, extConfig(t, noRedis, 1, "sh", "-c", "echo broken >&2; exit 3"))
	err := gone.WarmUp(context.Background())
	if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "warm-up") || !strings.Contains(err.Error(), "broken") {
		t.Errorf("warm-up of a program that exits: %v; want ErrUnusable naming the warm-up and quoting its stderr", err)
	}
}

// TestExternalSubject_SilentAfterWarmUp: a program that answered its
// warm-up and then nothing is silent (judged by the trial's faults), not
// unusable (a harness failure).
func TestExternalSubject_SilentAfterWarmUp(t *testing.T) {
	t.Parallel()
	// Answers its first request only.
	s := external(t, extConfig(t, noRedis, 1, "sh", "-c", `read -r l; printf '{"id":1,"ok":false,"error":"unsupported"}\n'; exec cat >/dev/null`))
	if err := s.WarmUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _ = s.Acquire(ctx)
	_ = s.Close()
	if err := s.Health(); !errors.Is(err, ErrSilent) || errors.Is(err, ErrUnusable) {
		t.Errorf("health: %v, want ErrSilent", err)
	}
}

// TestExternalSubject_StoppedAnswering: a program that answers its
// first acquire and then reads on without ever replying again is not
// healthy: its silence, not the lock, decided every later outcome (a trial
// of it was observed safe under failover-lock-loss). One that answers the
// same request late is alive: its late reply is dropped, but it is no
// problem.
func TestExternalSubject_StoppedAnswering(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, program string
		want          string // in Health's error; "" for none
	}{
		{"hangs", `read -r l; printf '{"id":1,"ok":true,"token":"t1"}\n'; exec cat >/dev/null`, "stopped answering: no reply to its acquire request (request 2 of 2)"},
		{"late", `read -r l; printf '{"id":1,"ok":true,"token":"t1"}\n'; read -r l; sleep 0.3; printf '{"id":2,"ok":true,"token":"t2"}\n'; exec cat >/dev/null`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := external(t, extConfig(t, noRedis, 1, "sh", "-c", tc.program))
			if _, err := s.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if _, err := s.Acquire(ctx); Outcome(err) != checker.Info {
				t.Fatalf("second acquire: %v, want an unknown outcome", err)
			}
			if tc.want == "" {
				for deadline := time.Now().Add(10 * time.Second); s.lines.Load() < 2 && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond) // until the late reply is written
				}
			}
			_ = s.Close()
			err := s.Health()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("health: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("health: %v, want one saying %q", err, tc.want)
			case errors.Is(err, ErrSilent) || errors.Is(err, ErrUnusable):
				t.Errorf("health: %v: it answered, so it is neither silent nor unusable", err)
			}
		})
	}
}
