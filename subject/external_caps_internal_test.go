package subject

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// python returns the command that runs src with /usr/bin/python3, or
// skips tb without it.
func python(tb testing.TB, src string) []string {
	tb.Helper()
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		tb.Skip("no /usr/bin/python3")
	}
	return []string{"/usr/bin/python3", "-c", src}
}

// renewals collects what a subject reports through Config.OnRenew.
type renewals struct {
	mu   sync.Mutex
	list []lockcore.Renewal
}

func (r *renewals) add(x lockcore.Renewal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, x)
}

func (r *renewals) all() []lockcore.Renewal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]lockcore.Renewal(nil), r.list...)
}

// renewingProgram grants every acquire with the token t<id>, then writes
// lines, each with TOKEN replaced by the grant's token and AT by
// CLOCK_MONOTONIC; a line "REPLY" stands for the reply itself.
func renewingProgram(tb testing.TB, lines ...string) []string {
	tb.Helper()
	if len(lines) == 0 || !strings.Contains(strings.Join(lines, "\n"), "REPLY") {
		lines = append([]string{"REPLY"}, lines...)
	}
	js, _ := json.Marshal(lines)
	return python(tb, `
import json, sys, time
lines = `+string(js)+`
for l in sys.stdin:
    req = json.loads(l)
    if req["op"] != "acquire":
        print(json.dumps({"id": req["id"], "ok": True}), flush=True)
        continue
    tok = "t%d" % req["id"]
    for out in lines:
        if out == "REPLY":
            out = json.dumps({"id": req["id"], "ok": True, "token": tok, "valid_ms": 1000})
        print(out.replace("TOKEN", tok).replace("AT", str(time.monotonic_ns())), flush=True)
`)
}

// renewConfig is client 1's config for argv, declaring caps, its
// renewals reported to r.
func renewConfig(tb testing.TB, r *renewals, caps []string, argv []string) Config {
	c := extConfig(tb, noRedis, 1, argv...)
	c.Lock.Caps, c.OnRenew = caps, r.add
	return c
}

// waitFor polls cond for up to 5s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestExternalSubject_Renewals: a program that declares renew reports its
// renewals on lines of its own; each is an extend (invoke, then ok with the
// deadline it reported: at_mono_ns + valid_ms, never later), and one that
// failed is an extend that failed and ends the lease (Lost). A renewal
// written before the reply that grants its lease is applied once it has.
func TestExternalSubject_Renewals(t *testing.T) {
	t.Parallel()
	renewed := `{"renewed": {"token": "TOKEN", "valid_ms": 1000, "at_mono_ns": AT}}`
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{"after the reply", []string{"REPLY", renewed, `{"renewed": {"token": "TOKEN", "ok": false, "error": "not held"}}`}},
		{"before the reply", []string{renewed, "REPLY", `{"renewed": {"token": "TOKEN", "ok": false, "error": "not held"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r renewals
			s := external(t, renewConfig(t, &r, []string{scenario.CapRenew}, renewingProgram(t, tc.lines...)))
			before := time.Now()
			g, err := s.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if g.Lost == nil {
				t.Fatal("the grant of a renewing program has no Lost channel")
			}
			select {
			case <-g.Lost:
			case <-time.After(5 * time.Second):
				t.Fatal("a failed renewal did not end the lease")
			}
			got := r.all()
			if len(got) != 4 || got[0].Done || !got[1].Done || got[2].Done || !got[3].Done {
				t.Fatalf("renewals %+v, want an invoke and a completion twice", got)
			}
			if got[1].Err != nil || got[1].Token != "t1" {
				t.Errorf("renewal %+v, want an ok one of t1", got[1])
			}
			// at_mono_ns was when the line was written, after before.
			if vu := got[1].ValidUntil; vu.After(time.Now().Add(time.Second)) || vu.Before(before.Add(time.Second)) {
				t.Errorf("renewed until %v after the acquire began, want a second after the renewal", vu.Sub(before))
			}
			if err := got[3].Err; !errors.Is(err, lockcore.ErrNotHeld) || Outcome(err) != checker.Fail || err.Error() != "python3: not held" {
				t.Errorf("failed renewal: %v, want ErrNotHeld in the program's words, recorded as fail", err)
			}
			_ = s.Close()
			if err := s.Health(); err != nil {
				t.Errorf("health: %v", err)
			}
		})
	}
}

// TestExternalSubject_NoticesWithoutRenew: renewal lines from a program
// that does not declare renew are lines that are not replies (it babbles),
// and a renewing program's notice that lockpick cannot place (at_mono_ns in
// the future: not CLOCK_MONOTONIC) is a health problem.
func TestExternalSubject_NoticesWithoutRenew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		caps []string
		line string
		want string
	}{
		{"undeclared", nil, `{"renewed": {"token": "TOKEN", "valid_ms": 1000, "at_mono_ns": AT}}`, "wrote 1 lines that are not replies"},
		{"undeclared lost", []string{scenario.CapBlock}, `{"lost": {"token": "TOKEN"}}`, "wrote 1 lines that are not replies"},
		{"future", []string{scenario.CapRenew}, `{"renewed": {"token": "TOKEN", "valid_ms": 1000, "at_mono_ns": 9AT}}`, "not CLOCK_MONOTONIC"},
		{"no deadline", []string{scenario.CapRenew}, `{"renewed": {"token": "TOKEN", "at_mono_ns": AT}}`, "no valid_ms above 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r renewals
			s := external(t, renewConfig(t, &r, tc.caps, renewingProgram(t, "REPLY", tc.line)))
			if _, err := s.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the line after the reply", func() bool { return s.lines.Load() >= 2 })
			_ = s.Close()
			if err := s.Health(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("health: %v, want one saying %q", err, tc.want)
			}
			if got := r.all(); len(got) > 0 {
				t.Errorf("renewals %+v, want none", got)
			}
		})
	}
}

// requestLog is a program that answers every request with reply (its id
// filled in) after sleeping delay seconds, and appends each request to a
// file; lines returns them.
func requestLog(tb testing.TB, delay, reply string) (argv []string, lines func() []map[string]any) {
	log := filepath.Join(tb.TempDir(), "requests")
	argv = []string{"sh", "-c", `while read -r l; do echo "$l" >>` + log + `; id=${l#*\"id\":}; sleep ` + delay +
		`; printf '{"id":%s,` + reply + `}\n' "${id%%,*}"; done`}
	return argv, func() []map[string]any {
		b, _ := os.ReadFile(log)
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				out = append(out, m)
			}
		}
		return out
	}
}

// TestExternalSubject_BlockingAcquire: with acquire: block and a program
// that declares block, an acquire is one request with wait_ms, the time
// the client has left (its context's deadline), and a timeout_ms that
// covers it: the program's "timed out waiting", answered after the bound,
// is recorded as it said (a refusal), not cut short. A program that does not
// declare block gets no wait_ms.
func TestExternalSubject_BlockingAcquire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		caps []string
		wait bool
	}{
		{"declares block", []string{scenario.CapBlock}, true},
		{"declares nothing", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			argv, requests := requestLog(t, "0.4", `"ok":false,"error":"timed out waiting"`)
			c := extConfig(t, noRedis, 1, argv...)
			c.Lock.Caps, c.Lock.Acquire = tc.caps, scenario.AcquireBlock
			s := external(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := s.Acquire(ctx)
			req := requests()
			if len(req) != 1 {
				t.Fatalf("requests %v, want one", req)
			}
			wait, _ := req[0]["wait_ms"].(float64)
			timeout, _ := req[0]["timeout_ms"].(float64)
			if !tc.wait {
				if _, ok := req[0]["wait_ms"]; ok || Outcome(err) != checker.Info {
					t.Errorf("request %v, acquire %v: want no wait_ms, and the 0.4s answer cut short at 0.3s (unknown)", req[0], err)
				}
				return
			}
			if wait < 250 || wait > 300 || timeout < wait+1000 {
				t.Errorf("wait_ms %v, timeout_ms %v: want the 300ms left, and a timeout that covers it and an answer", wait, timeout)
			}
			if !errors.Is(err, lockcore.ErrNotAcquired) || Outcome(err) != checker.Fail || err.Error() != "sh: timed out waiting" {
				t.Errorf("acquire: %v, want the program's refusal, recorded as fail", err)
			}
		})
	}
}

// TestExternalSubject_AsksForFence: a fenced scenario asks a program for
// a fencing token if it declares fence, or declares nothing (as before
// caps), and not if it declares caps without fence.
func TestExternalSubject_AsksForFence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		caps []string
		want bool
	}{{nil, true}, {[]string{scenario.CapFence}, true}, {[]string{scenario.CapBlock}, false}, {[]string{}, false}} {
		argv, requests := requestLog(t, "0", `"ok":true,"token":"t"`)
		c := extConfig(t, noRedis, 1, argv...)
		c.Lock.Caps, c.Fenced = tc.caps, true
		if _, err := external(t, c).Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := requests()[0]["fenced"] == true; got != tc.want {
			t.Errorf("caps %q: fenced %v, want %v", tc.caps, got, tc.want)
		}
	}
}

// TestExternalSubject_StartErrorOnce: a program that cannot start says
// why once, not twice.
func TestExternalSubject_StartErrorOnce(t *testing.T) {
	t.Parallel()
	s := external(t, extConfig(t, noRedis, 1, "/no/such/program"))
	err := s.WarmUp(context.Background())
	if err == nil || strings.Count(err.Error(), "/no/such/program: no such file") != 1 {
		t.Errorf("warm-up: %v; want the start error once", err)
	}
}

// TestExternalSubject_ClockSkew: a client clock skew reaches a program
// whose clock goes through libc: its wall clock runs the skew ahead, its
// CLOCK_MONOTONIC (a renewal's at_mono_ns) stays the host's. A program
// that does not map the shim is a health problem.
func TestExternalSubject_ClockSkew(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc to build the clock shim")
	}
	argv := python(t, `
import json, sys, time
for l in sys.stdin:
    req = json.loads(l)
    print(json.dumps({"id": req["id"], "ok": False, "error": "%d %d" % (time.time_ns(), time.monotonic_ns())}), flush=True)
`)
	c := extConfig(t, noRedis, 1, argv...)
	c.Lock.ClockSkew, c.ClockShimDir = []scenario.Duration{scenario.Duration(10 * time.Second)}, t.TempDir()
	s := external(t, c)
	if err := s.WarmUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	wall, mono := time.Now().UnixNano(), checker.Now()
	_, err := s.Acquire(context.Background())
	var said *programError
	if !errors.As(err, &said) {
		t.Fatalf("acquire: %v, want the program's clocks", err)
	}
	var clocks []int64
	for _, f := range strings.Fields(said.msg) {
		n, _ := strconv.ParseInt(f, 10, 64)
		clocks = append(clocks, n)
	}
	if len(clocks) != 2 {
		t.Fatalf("acquire: %v, want the program's clocks", err)
	}
	if d := time.Duration(clocks[0] - wall); d < 9*time.Second || d > 11*time.Second {
		t.Errorf("the program's wall clock is %v ahead, want 10s", d)
	}
	if d := time.Duration(clocks[1] - mono); d < 0 || d > time.Second {
		t.Errorf("the program's CLOCK_MONOTONIC is %v off the host's, want it unmoved", d)
	}
	if s.unshimmed != nil {
		t.Errorf("processes without the shim: %v", s.unshimmed)
	}
	dir := s.clockDir
	_ = s.Close()
	if err := s.Health(); err != nil {
		t.Errorf("health: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the clock file's directory outlived Close: %v", err)
	}

	// One whose processes do not map the shim (as a Go program's would not).
	s = external(t, extConfig(t, noRedis, 1, "sh", "-c", replier))
	if err := s.WarmUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.shim = "/no/such/clockshim.so"
	s.checkShim()
	_ = s.Close()
	if err := s.Health(); err == nil || !strings.Contains(err.Error(), "clock shim is not loaded in") {
		t.Errorf("health: %v, want one naming the processes without the shim", err)
	}
}
