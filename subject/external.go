package subject

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
)

// An Extender is a Subject that can renew its grant. It is optional: the
// workload does not extend today, but the adapters and the worker protocol
// can, for scenarios that will.
type Extender interface {
	// Extend renews the current grant and returns it with its new deadline.
	Extend(ctx context.Context) (Grant, error)
}

// WorkerEnv is the environment variable that turns a lockpick binary (or a
// test binary) into one isolated client: it holds the worker's spec as JSON.
//
// Clients named in a scenario's isolate list run this way, as their own OS
// processes, so that pausing one (SIGSTOP) freezes all of it, its lease
// watchdog included, exactly like a stop-the-world GC pause.
const WorkerEnv = "LOCKPICK_WORKER"

// Close releases what a client's subject holds outside the process,
// such as an external subject's program, if it is an [io.Closer].
func Close(s Subject) {
	if c, ok := s.(io.Closer); ok {
		_ = c.Close()
	}
}

// The external subject drives a lock living in another program, written in
// any language, through the worker protocol: one JSON request per line on
// the program's stdin, one JSON reply per line on its stdout. Every client
// starts its own copy of the program (lock.command) and warms it up before
// the trial's clock starts (see [externalSubject.WarmUp]); it ends with the
// client. docs/worker-protocol.md documents it.
func init() {
	// Its traits grow with what the program declares: see scenario.Program.
	Register("external", scenario.ExternalTraits, func(c Config) Subject { return &externalSubject{cfg: c} })
}

// An extRequest is one line lockpick writes to the program.
type extRequest struct {
	ID int64  `json:"id"`
	Op string `json:"op"` // acquire, release, extend, or hello (the warm-up)
	// Key is the lock's key.
	Key string `json:"key"`
	// TTLMS is the lease time to live, in milliseconds.
	TTLMS int64 `json:"ttl_ms"`
	// TimeoutMS is how long lockpick waits for the reply before it records
	// the outcome as unknown, in milliseconds.
	TimeoutMS int64 `json:"timeout_ms"`
	// Process is the client's number, from 1.
	Process int `json:"process"`
	// Nodes lists every Redis node's address, n1 first.
	Nodes []string `json:"nodes"`
	// Masters is how many of Nodes, from the first, are masters.
	Masters int `json:"masters,omitempty"`
	// Master is the node a single-instance lock uses: on acquire the current
	// master (the first node, or the one the sentinels name), on release
	// and extend the one the acquire was sent to.
	Master string `json:"master"`
	// Sentinels lists the sentinels' addresses, which monitor the master as
	// SentinelMaster, for a program that follows them itself.
	Sentinels      []string `json:"sentinels,omitempty"`
	SentinelMaster string   `json:"sentinel_master,omitempty"`
	// Cluster says the nodes form one Redis Cluster; Announced maps the
	// address each node gives in CLUSTER SLOTS and redirects to the one to
	// dial instead (its entry in Nodes), so faults on clients apply.
	Cluster   bool              `json:"cluster,omitempty"`
	Announced map[string]string `json:"announced,omitempty"`
	// NodeTimeoutMS bounds each request to one node, in milliseconds, for
	// a Redlock-style program; 0 leaves it to the program.
	NodeTimeoutMS int64 `json:"node_timeout_ms,omitempty"`
	// Etcd lists the etcd members' client addresses (their proxies), e1
	// first, on an etcd topology; Nodes is then empty and Master is e1's.
	Etcd []string `json:"etcd,omitempty"`
	// ZooKeeper lists the ZooKeeper members' client addresses (their
	// proxies), z1 first, on a ZooKeeper topology; Nodes is then empty and
	// Master is z1's.
	ZooKeeper []string `json:"zookeeper,omitempty"`
	// WaitMS, on a blocking acquire (the program declares block, the
	// scenario says acquire: block), is how long the program may wait for
	// the lock, in milliseconds; TimeoutMS then covers the wait and the
	// answer.
	WaitMS int64 `json:"wait_ms,omitempty"`
	// Fenced asks for a fencing token.
	Fenced bool `json:"fenced,omitempty"`
	// Token is the grant's token, on release and extend.
	Token string `json:"token,omitempty"`
}

// An extReply is one line the program writes back.
type extReply struct {
	ID int64 `json:"id"`
	OK bool  `json:"ok"`
	// Unknown, with OK false, means the operation may have taken effect.
	Unknown bool   `json:"unknown"`
	Error   string `json:"error"`
	Token   string `json:"token"`
	Fence   int64  `json:"fence"`
	// ValidMS is how long the grant is valid, in milliseconds, counted from
	// when lockpick wrote the request. default: the TTL.
	ValidMS *int64 `json:"valid_ms"`
	// Nodes lists the addresses of the nodes that granted. default: Master.
	Nodes []string `json:"nodes"`
}

// An extLine is any line the program writes: a reply or, from a program
// that declares renew, a notice of its own (Renewed or Lost set), which
// answers no request.
type extLine struct {
	extReply
	Renewed *extRenewed `json:"renewed"`
	Lost    *extLost    `json:"lost"`
}

// notice reports whether the line is a notice rather than a reply.
func (l extLine) notice() bool { return l.Renewed != nil || l.Lost != nil }

// An extRenewed is a renewing program's report of one renewal of the lease
// it holds: {"renewed": {"token": "...", "valid_ms": N, "at_mono_ns": M}}.
type extRenewed struct {
	// Token names the lease: its acquire's token.
	Token string `json:"token"`
	// OK is false when the program gave the lease up: its renewal found
	// the lease gone, or failed until the lease ran out. default: true.
	OK *bool `json:"ok"`
	// ValidMS is how long the renewed lease is valid, in milliseconds,
	// counted from AtMonoNS.
	ValidMS *int64 `json:"valid_ms"`
	// AtMonoNS is when the program sent the renewal, on CLOCK_MONOTONIC
	// in nanoseconds (the clock of the history, shared by the host's
	// processes).
	AtMonoNS int64 `json:"at_mono_ns"`
	// Unknown, with OK false, means the last renewal may have taken effect.
	Unknown bool   `json:"unknown"`
	Error   string `json:"error"`
}

// ok reports whether the renewal renewed the lease.
func (r *extRenewed) ok() bool { return r.OK == nil || *r.OK }

// An extLost is a renewing program's notice that the lease is gone, by
// whatever means it learned it: {"lost": {"token": "...", "error": "..."}}.
type extLost struct {
	Token string `json:"token"`
	Error string `json:"error"`
}

// errExited is the error of a call to a program that is no longer running.
var errExited = errors.New("external subject exited")

// closeGrace is how long Close lets the program exit after end of input.
const closeGrace = time.Second

// WarmUpTimeout bounds how long a lock program may take to answer its
// warm-up request, start-up included (a JVM, an interpreter loading its
// libraries), unless $LOCKPICK_WARMUP_TIMEOUT (a Go duration) says
// otherwise; see [WarmUpLimit].
const WarmUpTimeout = 30 * time.Second

// WarmUpEnv names the environment variable that overrides [WarmUpTimeout].
const WarmUpEnv = "LOCKPICK_WARMUP_TIMEOUT"

// WarmUpLimit returns $LOCKPICK_WARMUP_TIMEOUT if it is a positive
// duration, else [WarmUpTimeout].
func WarmUpLimit() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(WarmUpEnv)); err == nil && d > 0 {
		return d
	}
	return WarmUpTimeout
}

// An externalSubject is one client's copy of the program.
type externalSubject struct {
	cfg Config

	cmd      *exec.Cmd
	stdin    io.WriteCloser
	replies  chan extReply
	exited   chan struct{} // closed once the program's stdout ended and it was reaped
	quit     chan struct{} // closed by Close
	waitErr  error         // the program's exit status, set before exited closes
	startErr error
	id       int64

	token  string // the current grant's, "" without one
	master string // the address its acquire was sent to
	node   string // the node(s) that granted it

	// A renewing program's notices, from read's goroutine: the lease they
	// are of, and those of no lease lockpick knows yet (the reply that
	// grants it may still be on its way), kept until the next acquire.
	mu    sync.Mutex
	lease *extLease
	early []extLine

	// The clock shim, preloaded into a program whose client's clock is
	// skewed: the library, the directory of its clock file (removed by
	// Close), and the program's processes that do not map it.
	shim, clockDir string
	unshimmed      []string

	// What Health reports, written by call and read (and by read's
	// goroutine before exited closes).
	calls, answered int
	warm            bool   // it answered its warm-up request
	notReplies      int    // lines that are not JSON replies
	notReply        string // the first of them
	noDeadline      int    // grants without a usable deadline
	noToken         int    // grants without a token
	badNotices      int    // notices lockpick cannot use (read's goroutine)
	badNotice       string // the first of them
	diedEarly       bool   // it exited before Close asked it to
	stderr          tailWriter

	// lines counts every line the program wrote on stdout, replies or
	// not, late ones included; read's goroutine adds to it.
	lines atomic.Int64
	// hung is the last run of requests that got no reply in time: from
	// its first, which went out when lines was hung.lines.
	hung struct {
		on    bool
		lines int64 // lines when its first request went out
		calls int   // calls before its first request
		op    string
	}
}

var (
	_ Subject        = (*externalSubject)(nil)
	_ Extender       = (*externalSubject)(nil)
	_ HealthReporter = (*externalSubject)(nil)
	_ Warmer         = (*externalSubject)(nil)
	_ ProgramHost    = (*externalSubject)(nil)
	_ io.Closer      = (*externalSubject)(nil)
)

func (s *externalSubject) Acquire(ctx context.Context) (Grant, error) {
	m := s.cfg.Target.firstNode()
	switch {
	case s.cfg.Target.view.Cluster:
		var err error
		if m, err = s.cfg.Target.keyPrimary(ctx, s.cfg.Lock.Key); err != nil {
			return Grant{}, noMaster(s.cfg.Lock.Key, err)
		}
	case len(s.cfg.Target.view.Sentinels) > 0:
		var err error
		if m, err = s.cfg.Target.askSentinels(ctx); err != nil {
			return Grant{}, noMaster(s.cfg.Lock.Key, err)
		}
	}
	s.token = ""
	req := extRequest{Op: "acquire", Master: m.Addr, Fenced: s.fenced()}
	callCtx, timeout := ctx, s.cfg.Lock.TTL.D()
	if s.blocks() {
		wait := s.waitBound(ctx)
		if wait <= 0 {
			// Nothing was sent: surely not acquired.
			return Grant{Node: m.Name}, &lockcore.OpError{Op: "acquire", Key: s.cfg.Lock.Key,
				Err: fmt.Errorf("external subject: no time left to wait for the lock: %w", context.DeadlineExceeded)}
		}
		// The program ends its wait at the bound and answers: lockpick waits
		// a little longer for that answer, and does not cut it short.
		req.WaitMS = max(wait.Milliseconds(), 1)
		callCtx, timeout = context.WithoutCancel(ctx), wait+min(s.cfg.Lock.TTL.D(), blockAnswer)
	}
	s.mu.Lock()
	s.early = nil // notices of earlier leases
	s.mu.Unlock()
	asked := checker.Now()
	r, sent, err := s.exchange(callCtx, req, timeout)
	if err != nil {
		return Grant{Node: m.Name}, err
	}
	if r.ValidMS != nil && *r.ValidMS <= 0 {
		// A grant it says is already over: the protocol has no such thing,
		// and the history could not place the lease. It may hold the lock.
		s.noDeadline++
		return Grant{Node: m.Name}, &lockcore.OpError{Op: "acquire", Key: s.cfg.Lock.Key, Indeterminate: true,
			Err: fmt.Errorf("external subject granted the lock with valid_ms %d: no deadline", *r.ValidMS)}
	}
	if r.Token == "" {
		// Without a token there is nothing to release the grant with.
		s.noToken++
		return Grant{Node: m.Name}, &lockcore.OpError{Op: "acquire", Key: s.cfg.Lock.Key, Indeterminate: true,
			Err: errors.New("external subject granted the lock without a token")}
	}
	g := s.grant(r, sent, m.Name)
	s.token, s.master, s.node = g.Token, m.Addr, g.Node
	if s.renews() {
		g.Lost = s.renewing(g.Token, asked)
	}
	return g, nil
}

// blockAnswer bounds how long after its wait a blocking acquire's answer
// may come (and the TTL, if shorter): the program's last try, or the
// cancelling of its waiter, is still under way at the bound.
const blockAnswer = time.Second

// fenced reports whether an acquire asks for a fencing token: in a fenced
// scenario, from a program that declares fence or declares nothing.
func (s *externalSubject) fenced() bool {
	return s.cfg.Fenced && (s.cfg.Lock.Caps == nil || s.cfg.Lock.Declares(scenario.CapFence))
}

// blocks reports whether an acquire is one blocking request: the scenario
// says acquire: block, and the program declares block.
func (s *externalSubject) blocks() bool {
	return s.cfg.Lock.Acquire == scenario.AcquireBlock && s.cfg.Lock.Declares(scenario.CapBlock)
}

// renews reports whether the program declares that it renews its leases
// itself, and reports each renewal (see [externalSubject.heard]).
func (s *externalSubject) renews() bool { return s.cfg.Lock.Declares(scenario.CapRenew) }

// waitBound is how long a blocking acquire may wait: until ctx's deadline
// (the worker's: the scenario's wait, or what is left of the trial), else
// the scenario's wait, else the TTL.
func (s *externalSubject) waitBound(ctx context.Context) time.Duration {
	if ctx.Err() != nil {
		return 0
	}
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	if w := s.cfg.Lock.Wait.D(); w > 0 {
		return w
	}
	return s.cfg.Lock.TTL.D()
}

func (s *externalSubject) Release(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.lease = nil // the program stops renewing it before it answers
	s.mu.Unlock()
	if s.token == "" {
		return s.node, lockcore.ErrReleased
	}
	token := s.token
	s.token = ""
	_, _, err := s.call(ctx, extRequest{Op: "release", Master: s.master, Token: token})
	return s.node, err
}

// Extend asks the program to renew the current grant.
func (s *externalSubject) Extend(ctx context.Context) (Grant, error) {
	if s.token == "" {
		return Grant{}, lockcore.ErrReleased
	}
	r, sent, err := s.call(ctx, extRequest{Op: "extend", Master: s.master, Token: s.token})
	if err != nil {
		if errors.Is(err, lockcore.ErrNotHeld) {
			s.token = ""
		}
		return Grant{Node: s.node}, err
	}
	g := s.grant(r, sent, s.node)
	if g.Token == "" {
		g.Token = s.token
	}
	return g, nil
}

// grant turns an ok reply into a Grant; node is the default for Node.
func (s *externalSubject) grant(r extReply, sent time.Time, node string) Grant {
	valid := s.cfg.Lock.TTL.D()
	if r.ValidMS != nil {
		valid = time.Duration(*r.ValidMS) * time.Millisecond
	}
	if len(r.Nodes) > 0 {
		names := make([]string, len(r.Nodes))
		for i, a := range r.Nodes {
			names[i] = s.name(a)
		}
		node = strings.Join(names, ",")
	}
	return Grant{Token: r.Token, Fence: r.Fence, ValidUntil: sent.Add(valid), Node: node}
}

// An extLease is the lease of a renewing program that lockpick knows:
// granted, and not yet released or given up.
type extLease struct {
	token string
	lost  chan struct{} // the grant's Lost: closed when the program gives it up
}

// maxEarly bounds the notices kept for a lease not granted yet.
const maxEarly = 16

// renewing makes token's lease, granted by an acquire sent after asked
// (CLOCK_MONOTONIC ns), the one the program's notices are of, and applies
// those of it that came before the reply that granted it. It returns the
// lease's Lost channel.
func (s *externalSubject) renewing(token string, asked int64) <-chan struct{} {
	l := &extLease{token: token, lost: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lease = l
	early := s.early
	s.early = nil
	for _, n := range early {
		// A renewal sent before the acquire is of another lease that had
		// the same token.
		if s.lease != nil && n.token() == token && (n.Renewed == nil || !n.Renewed.ok() || n.Renewed.AtMonoNS >= asked) {
			s.apply(n)
		}
	}
	return l.lost
}

// token returns the token a notice is of.
func (l extLine) token() string {
	if l.Renewed != nil {
		return l.Renewed.Token
	}
	return l.Lost.Token
}

// unusable says why lockpick cannot use a notice read when
// CLOCK_MONOTONIC was now, or "" if it can.
func (l extLine) unusable(now int64) string {
	r := l.Renewed
	switch {
	case l.token() == "":
		return "no token"
	case r == nil || !r.ok():
		return ""
	case r.ValidMS == nil || *r.ValidMS <= 0:
		return "no valid_ms above 0"
	case r.AtMonoNS <= 0:
		return "no at_mono_ns"
	case r.AtMonoNS > now:
		return fmt.Sprintf("at_mono_ns %d is %v after lockpick read it: not CLOCK_MONOTONIC", r.AtMonoNS, time.Duration(r.AtMonoNS-now))
	}
	return ""
}

// heard takes a notice from a renewing program, on read's goroutine: a
// renewal of the lease lockpick knows is recorded as an extend (through
// [Config].OnRenew), with the deadline the program reported; a renewal
// that failed, or a lost notice, ends the lease (its Lost closes). A
// notice of no lease lockpick knows is kept until the next acquire, in
// case the reply that grants it is still on its way; one lockpick cannot
// use is counted for Health.
func (s *externalSubject) heard(n extLine, text string) {
	if why := n.unusable(checker.Now()); why != "" {
		if s.badNotices++; s.badNotices == 1 {
			s.badNotice = fmt.Sprintf("%q (%s)", trim(text, 80), why)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == nil || s.lease.token != n.token() {
		if len(s.early) < maxEarly {
			s.early = append(s.early, n)
		}
		return
	}
	s.apply(n)
}

// apply applies notice n to s.lease, which it is of; the caller holds s.mu.
func (s *externalSubject) apply(n extLine) {
	l := s.lease
	if n.Lost != nil {
		s.lose()
		return
	}
	report := s.cfg.OnRenew
	if report == nil {
		report = func(lockcore.Renewal) {}
	}
	r := n.Renewed
	report(lockcore.Renewal{Token: l.token})
	if r.ok() {
		report(lockcore.Renewal{Done: true, Token: l.token, ValidUntil: s.deadline(r.AtMonoNS, *r.ValidMS)})
		return
	}
	var answer error = lockcore.ErrNotHeld
	if r.Unknown {
		answer = &lockcore.OpError{Op: "extend", Key: s.cfg.Lock.Key, Indeterminate: true, Err: errors.New(r.Error)}
	}
	report(lockcore.Renewal{Done: true, Token: l.token, Err: s.said(r.Error, answer)})
	s.lose()
}

// lose ends s.lease, closing its Lost; the caller holds s.mu.
func (s *externalSubject) lose() {
	close(s.lease.lost)
	s.lease = nil
}

// deadline turns a renewal's deadline, at (CLOCK_MONOTONIC ns) plus
// validMS, into a time on the client's clock. The client's clock is read
// first, so the result is never later than the program's deadline.
func (s *externalSubject) deadline(at, validMS int64) time.Time {
	now := s.cfg.Clock().Now()
	mono := checker.Now()
	return now.Add(time.Duration(at-mono) + time.Duration(validMS)*time.Millisecond)
}

// call sends req and waits for its reply, for at most the TTL. It returns
// the reply of an ok operation and when, on the client's clock, the request
// went out; otherwise an error the history can classify: matching
// [lockcore.ErrNotAcquired] (acquire) or [lockcore.ErrNotHeld] when the
// program said no, a *[lockcore.OpError] with Indeterminate set when it
// may have acted (no reply in time, it exited, or it said unknown), and a
// plain error when the request never reached it.
func (s *externalSubject) call(ctx context.Context, req extRequest) (extReply, time.Time, error) {
	return s.exchange(ctx, req, s.cfg.Lock.TTL.D())
}

// WarmUp starts the program and sends it a hello request, which it answers
// like any op it does not support (any reply proves it is up); it waits
// for the answer for at most [WarmUpLimit]. The runner calls it before
// the trial's clock starts, so the program's start-up does not eat into
// the fault schedule. A program that does not answer is closed, and its
// error wraps [ErrUnusable]. The hello is not counted in Health.
func (s *externalSubject) WarmUp(ctx context.Context) error {
	calls, answered := s.calls, s.answered
	timeout := WarmUpLimit()
	_, _, err := s.exchange(ctx, extRequest{Op: "hello", Master: s.cfg.Target.firstNode().Addr}, timeout)
	up := s.answered > answered
	s.calls, s.answered = calls, answered
	if up {
		s.warm = true
		s.checkShim()
		return nil
	}
	_ = s.Close() // so the reader is done with what it counts
	var oe *lockcore.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	s.diedEarly = false // err says so, and there was no trial yet
	what := append([]string{fmt.Sprintf("answered none of its requests, not even its warm-up (op hello, waited up to %v): %v", timeout, err)}, s.troubles()...)
	if strings.Contains(err.Error(), "no reply in") && s.notReplies == 0 {
		what = append(what, "if it was running, its replies may be waiting in its stdout buffer: flush after every reply (docs/worker-protocol.md)")
	}
	return fmt.Errorf("%w: %s %s%s", ErrUnusable, s.who(), strings.Join(what, "; "), s.stderr.lastLines())
}

// exchange is call with timeout in place of the TTL.
func (s *externalSubject) exchange(ctx context.Context, req extRequest, timeout time.Duration) (extReply, time.Time, error) {
	if err := s.start(); err != nil {
		// Nothing ran: the program did not start.
		return extReply{}, time.Time{}, &lockcore.OpError{Op: req.Op, Key: s.cfg.Lock.Key, Err: err}
	}
	view := s.cfg.Target.view
	s.id++
	req.ID, req.Key, req.TTLMS, req.Process = s.id, s.cfg.Lock.Key, s.cfg.Lock.TTL.D().Milliseconds(), s.cfg.Process
	req.NodeTimeoutMS = s.cfg.Lock.NodeTimeout.D().Milliseconds()
	for _, n := range view.Nodes {
		req.Nodes = append(req.Nodes, n.Addr)
	}
	req.Masters = view.Masters
	for _, m := range view.Etcd {
		req.Etcd = append(req.Etcd, m.Addr)
	}
	for _, m := range view.ZooKeeper {
		req.ZooKeeper = append(req.ZooKeeper, m.Addr)
	}
	if view.Cluster {
		req.Cluster, req.Announced = true, map[string]string{}
		for _, n := range view.Nodes {
			req.Announced[n.Announced] = n.Addr
		}
	}
	if len(view.Sentinels) > 0 {
		req.Sentinels, req.SentinelMaster = view.Sentinels, cluster.MasterName
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	req.TimeoutMS = max(timeout.Milliseconds(), 1)
	line, err := json.Marshal(req)
	if err != nil {
		return extReply{}, time.Time{}, err
	}
	unknown := func(err error) error {
		return &lockcore.OpError{Op: req.Op, Key: req.Key, Indeterminate: true, Err: err}
	}
	sent := s.cfg.Clock().Now()
	heard := s.lines.Load()
	s.calls++
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		// The request never reached it: surely not applied.
		return extReply{}, sent, &lockcore.OpError{Op: req.Op, Key: req.Key,
			Err: fmt.Errorf("%w (%v): write %s request: %w", errExited, s.exitStatus(), req.Op, err)}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	began := time.Now()
	for {
		var r extReply
		select {
		case r = <-s.replies:
		case <-s.exited:
			select {
			case r = <-s.replies: // its last words
			default:
				return extReply{}, sent, unknown(fmt.Errorf("%w (%v) before it replied", errExited, s.waitErr))
			}
		case <-ctx.Done():
			// A caller that gave up early (the trial ended while a lock
			// wait was pending) says nothing of the program; one whose
			// deadline was the request's own timeout does.
			if time.Since(began) >= timeout {
				s.noReply(req.Op, heard)
			}
			return extReply{}, sent, unknown(ctx.Err())
		case <-timer.C:
			s.noReply(req.Op, heard)
			return extReply{}, sent, unknown(fmt.Errorf("external subject: no reply in %v", timeout))
		}
		if r.ID != req.ID {
			continue // the late reply to a request that timed out
		}
		s.answered++
		switch {
		case r.OK:
			return r, sent, nil
		case r.Unknown:
			return extReply{}, sent, s.said(r.Error, unknown(errors.New(r.Error)))
		case req.Op == "acquire":
			return extReply{}, sent, s.said(r.Error, lockcore.ErrNotAcquired)
		default:
			return extReply{}, sent, s.said(r.Error, lockcore.ErrNotHeld)
		}
	}
}

// noReply notes a request (op) that got no reply in time; heard is
// s.lines when it went out. A run of such requests with no line from the
// program since the first of them is where it stopped answering (Health).
func (s *externalSubject) noReply(op string, heard int64) {
	if s.hung.on && s.lines.Load() == s.hung.lines {
		return // still the same silence
	}
	s.hung.on, s.hung.lines, s.hung.calls, s.hung.op = true, heard, s.calls-1, op
}

// stopped says how the program stopped answering for good: a request got
// no reply in time, and it wrote nothing more, not even a late reply, up
// to its end. "" when it did not. Call it after Close.
func (s *externalSubject) stopped() string {
	if !s.hung.on || s.lines.Load() != s.hung.lines {
		return ""
	}
	return fmt.Sprintf("stopped answering: no reply to its %s request (request %d of %d) nor to any after it, "+
		"and not a line more on stdout to the end of the trial", s.hung.op, s.hung.calls+1, s.calls)
}

// start runs the program on first use, in its own process group so Close
// can end whatever it started, and killed should lockpick die first.
func (s *externalSubject) start() error {
	if s.cmd != nil || s.startErr != nil {
		return s.startErr
	}
	argv := s.cfg.Lock.Command
	cmd := exec.Command(argv[0], argv[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, WorkerEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stderr = io.MultiWriter(os.Stderr, &s.stderr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var err error
	if skew := s.cfg.Lock.Skew(s.cfg.Process); skew != 0 {
		if cmd.Env, err = s.skewClock(cmd.Env, skew); err != nil {
			s.startErr = fmt.Errorf("external subject: start %s with its client's clock skewed %v: %w", argv[0], skew, err)
			return s.startErr
		}
	}
	stdin, err := cmd.StdinPipe()
	if err == nil {
		var out io.ReadCloser
		if out, err = cmd.StdoutPipe(); err == nil {
			if err = cmd.Start(); err == nil {
				s.cmd, s.stdin = cmd, stdin
				s.replies, s.exited, s.quit = make(chan extReply), make(chan struct{}), make(chan struct{})
				go s.read(out)
				return nil
			}
		}
	}
	s.startErr = fmt.Errorf("external subject: start %s: %w", argv[0], err)
	return s.startErr
}

// read feeds the program's replies to call, and its notices to heard,
// until its stdout ends, then reaps it. Lines that are neither (not JSON
// objects, or notices from a program that does not declare renew) are
// counted for Health.
func (s *externalSubject) read(out io.Reader) {
	defer close(s.exited)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		s.lines.Add(1)
		var l extLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || (l.notice() && !s.renews()) {
			if s.notReplies++; s.notReplies == 1 {
				s.notReply = sc.Text()
			}
			continue
		}
		if l.notice() {
			s.heard(l, sc.Text())
			continue
		}
		select {
		case s.replies <- l.extReply:
		case <-s.quit:
		}
	}
	_, _ = io.Copy(io.Discard, out)
	s.waitErr = s.cmd.Wait()
	select {
	case <-s.quit:
	default:
		s.diedEarly = true
	}
}

// Health reports a program that never answered (wrapping
// [ErrUnusable], or [ErrSilent] if it answered its warm-up),
// and one that wrote lines that are not replies,
// granted a lock without a deadline, or exited before the end of the trial.
// Call it after Close.
func (s *externalSubject) Health() error {
	if s.cmd == nil && s.startErr == nil {
		return nil // never asked anything
	}
	what := s.troubles()
	if s.startErr != nil {
		what = append([]string{s.startErr.Error()}, what...)
	}
	if (s.answered == 0 && s.calls > 0) || s.startErr != nil {
		// Up since its warm-up, its silence is the trial's doing.
		kind, after := ErrUnusable, ""
		if s.warm {
			kind, after = ErrSilent, " after answering its warm-up"
		}
		what = append([]string{fmt.Sprintf("answered none of %d requests%s", s.calls, after)}, what...)
		return fmt.Errorf("%w: %s %s%s", kind, s.who(), strings.Join(what, "; "), s.stderr.lastLines())
	}
	if len(what) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s%s", s.who(), strings.Join(what, "; "), s.stderr.lastLines())
}

// who names the program and its client, for messages.
func (s *externalSubject) who() string {
	return fmt.Sprintf("lock program %s (client %d)", strings.Join(s.cfg.Lock.Command, " "), s.cfg.Process)
}

// troubles lists how the program misbehaved once started, for Health
// and WarmUp; call it after Close.
func (s *externalSubject) troubles() []string {
	var what []string
	if s.diedEarly {
		what = append(what, fmt.Sprintf("exited (%v) before the end of the trial", s.waitErr))
	}
	if s.answered > 0 {
		if why := s.stopped(); why != "" {
			what = append(what, why)
		}
	}
	if s.notReplies > 0 {
		what = append(what, fmt.Sprintf("wrote %d lines that are not replies, e.g. %q", s.notReplies, trim(s.notReply, 80)))
	}
	if s.noDeadline > 0 {
		what = append(what, fmt.Sprintf("granted %d locks without a deadline (valid_ms <= 0)", s.noDeadline))
	}
	if s.noToken > 0 {
		what = append(what, fmt.Sprintf("granted %d locks without a token", s.noToken))
	}
	if s.badNotices > 0 {
		what = append(what, fmt.Sprintf("wrote %d notices lockpick cannot use, e.g. %s (docs/worker-protocol.md: renewals)", s.badNotices, s.badNotice))
	}
	if len(s.unshimmed) > 0 {
		what = append(what, fmt.Sprintf("runs with its client's clock skewed %v, but lockpick's clock shim is not loaded in %s: "+
			"its clock is not skewed (a static binary, or a Go program, reads the clock past libc)",
			s.cfg.Lock.Skew(s.cfg.Process), strings.Join(s.unshimmed, ", ")))
	}
	return what
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// A tailWriter keeps the last lines written to it, for error messages.
type tailWriter struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

const tailLines = 5

func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, b...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.lines = append(w.lines, string(w.part[:i]))
		w.part = w.part[i+1:]
	}
	if len(w.lines) > tailLines {
		w.lines = w.lines[len(w.lines)-tailLines:]
	}
	if len(w.part) > 4096 {
		w.part = w.part[len(w.part)-4096:]
	}
	return len(b), nil
}

// lastLines returns "; last lines of its stderr:\n  ..." or "".
func (w *tailWriter) lastLines() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := w.lines
	if len(w.part) > 0 {
		lines = append(slices.Clone(lines), string(w.part))
	}
	if len(lines) == 0 {
		return "; it wrote nothing on stderr"
	}
	return "; last lines of its stderr:\n  " + strings.Join(lines, "\n  ")
}

func (s *externalSubject) exitStatus() string {
	select {
	case <-s.exited:
		return fmt.Sprint(s.waitErr)
	default:
		return "still running"
	}
}

// Close ends the program: end of input first, then SIGKILL to its process
// group after [closeGrace]. It is idempotent.
func (s *externalSubject) Close() error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.quit:
		return nil
	default:
	}
	close(s.quit)
	_ = s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(closeGrace):
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	if s.clockDir != "" {
		_ = os.RemoveAll(s.clockDir)
	}
	return nil
}

// ProgramGroup returns the process group the program runs in (its pid),
// or 0 if it is not running.
func (s *externalSubject) ProgramGroup() int {
	if s.cmd == nil {
		return 0
	}
	select {
	case <-s.exited:
		return 0
	default:
		return s.cmd.Process.Pid
	}
}

// name returns the name of the node at addr, or addr if none is.
func (s *externalSubject) name(addr string) string {
	return s.cfg.Target.nodeNamed(addr)
}

// said is the program's own error reply, recorded in its words under its
// name; answer is what lockpick makes of it (a refusal, or an unknown
// outcome), for errors.Is and [lockcore.MayHaveRun].
func (s *externalSubject) said(msg string, answer error) error {
	return &programError{prog: filepath.Base(s.cfg.Lock.Command[0]), msg: msg, answer: answer}
}

// A programError is an error a lock program replied with.
type programError struct {
	prog, msg string
	answer    error
}

func (e *programError) Error() string {
	msg := e.msg
	if msg == "" {
		msg = "no reason given"
	}
	if lockcore.MayHaveRun(e.answer) {
		msg += " (outcome unknown)"
	}
	return e.prog + ": " + msg
}

func (e *programError) Unwrap() error { return e.answer }
