package trial

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// workerSpec is what an isolated client needs to play its part.
type workerSpec struct {
	Process   int               `json:"process"`
	Scenario  scenario.Scenario `json:"scenario"`
	View      subject.View      `json:"view"`
	StartMono int64             `json:"start_mono"` // CLOCK_MONOTONIC ns when the trial began
}

// IsWorker reports whether this process was started as an isolated client.
func IsWorker() bool { return os.Getenv(subject.WorkerEnv) != "" }

// ServeWorker runs the isolated client described by $LOCKPICK_WORKER,
// writing its events to w as JSON lines. It first writes "ready" and waits
// for the runner's "go <start>" on in, so the trial's clock starts only when
// every client is up, whatever exec took; it runs for the scenario's
// duration, or until the runner writes "stop" (a trial that ended early:
// see scenario.Early).
func ServeWorker(ctx context.Context, in io.Reader, w io.Writer) error {
	SilenceRedisLogs()
	var spec workerSpec
	if err := json.Unmarshal([]byte(os.Getenv(subject.WorkerEnv)), &spec); err != nil {
		return fmt.Errorf("worker: bad spec: %w", err)
	}
	s := spec.Scenario.WithDefaults()
	tgt := subject.NewTarget(spec.View)
	defer tgt.Close()
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	var werr error
	emit := func(e checker.Event) {
		e.Time = monoNow()
		mu.Lock()
		defer mu.Unlock()
		if err := enc.Encode(e); err != nil && werr == nil {
			werr = err
		}
	}
	wk := newWorker(spec.Process, s, tgt, emit, &problemLog{})
	defer subject.Close(wk.subj) // on the paths that do not reach finish
	tgt.PingNodes(ctx)
	if err := wk.warmUp(ctx); err != nil {
		_, _ = fmt.Fprintln(w, notReadyLine+oneLine(err.Error()))
		return err
	}
	var ready workerReady
	if ph, ok := wk.subj.(subject.ProgramHost); ok {
		ready.ProgramGroup = ph.ProgramGroup()
	}
	if err := writeReady(w, ready); err != nil {
		return err
	}
	if _, err := fmt.Fscanf(in, "go %d\n", &spec.StartMono); err != nil {
		return fmt.Errorf("worker: no start signal: %w", err)
	}
	left := s.Duration.D() - time.Duration(monoNow()-spec.StartMono)
	ctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	go func() {
		for sc := bufio.NewScanner(in); sc.Scan(); {
			if sc.Text() == stopLine {
				cancel()
				return
			}
		}
	}()
	wk.late = time.Duration(monoNow() - spec.StartMono)
	if spec.View.Resource != "" {
		wk.res = &resourceClient{addr: spec.View.Resource}
	}
	wk.run(ctx)
	var d workerDone
	if err := wk.finish(); err != nil {
		d.Unusable = err.Error()
	}
	d.Problems = wk.problems.all()
	mu.Lock()
	defer mu.Unlock()
	if werr != nil {
		return werr
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", doneLine, b)
	return err
}

// stopLine ends an isolated client's run before the scenario's duration.
const stopLine = "stop"

// readyLine is the first line an isolated client writes, once its lock is
// up: "ready", then, for a lock program, a space and a [workerReady].
const readyLine = "ready"

// workerReady is what an isolated client tells the runner when it is ready.
type workerReady struct {
	// ProgramGroup is the process group of its lock program, 0 without
	// one: the runner freezes it whenever it freezes the client (see
	// [workerProc.freezeProgram]).
	ProgramGroup int `json:"program_group,omitempty"`
}

// writeReady writes the ready line of r.
func writeReady(w io.Writer, r workerReady) error {
	line := readyLine
	if r != (workerReady{}) {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		line += " " + string(b)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// parseReady reads a ready line: ok is false if line is not one.
func parseReady(line string) (r workerReady, ok bool) {
	rest, ok := strings.CutPrefix(line, readyLine)
	switch {
	case !ok:
		return r, false
	case rest == "":
		return r, true
	case rest[0] != ' ':
		return r, false
	}
	return r, json.Unmarshal([]byte(rest[1:]), &r) == nil
}

// notReadyLine starts the line an isolated client writes instead of
// "ready" when its lock did not answer its warm-up, with the reason.
const notReadyLine = "not ready: "

// oneLine joins the lines of s with " / ".
func oneLine(s string) string { return strings.Join(strings.Split(s, "\n"), " / ") }

// doneLine starts the last line an isolated client writes, after its
// events: its problems as JSON. A worker that exits without it died.
const doneLine = "done "

// workerDone is what an isolated client reports when it is done.
type workerDone struct {
	// Problems are its subject's troubles, for the trial's evidence.
	Problems []string `json:"problems,omitempty"`
	// Unusable is set when its subject never worked at all.
	Unusable string `json:"unusable,omitempty"`
}

// A workerProc is an isolated client as seen by the runner.
type workerProc struct {
	process int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	ready   chan struct{}
	done    chan struct{} // closed once its output ended and it was reaped

	// Set by the reader before done closes.
	report    *workerDone // its last words; nil if it died
	notReady  string      // why it could not start, if it said so
	badLines  int         // lines that are not events
	badLine   string
	exitErr   error
	startMono int64
	exitMono  int64
	killed    time.Duration // the grace it overran, if the runner killed it
}

// A recorder takes events: a [checker.Recorder] in a trial, the soak's log
// in a soak.
type recorder interface {
	Record(checker.Event) checker.Event
}

// startWorker starts an isolated client and feeds its events to rec.
func startWorker(spec workerSpec, rec recorder, stderr io.Writer) (*workerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "worker")
	cmd.Env = append(os.Environ(), subject.WorkerEnv+"="+string(b))
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %d: %w", spec.Process, err)
	}
	p := &workerProc{process: spec.Process, cmd: cmd, stdin: stdin, ready: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		if sc.Scan() {
			if r, ok := parseReady(sc.Text()); ok {
				if r.ProgramGroup > 0 {
					go p.freezeProgram(r.ProgramGroup)
				}
				close(p.ready)
			} else if why, ok := strings.CutPrefix(sc.Text(), notReadyLine); ok {
				p.notReady = why
			}
		}
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), doneLine); ok && p.report == nil {
				var d workerDone
				if json.Unmarshal([]byte(rest), &d) == nil {
					p.report = &d
					continue
				}
			}
			var e checker.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil || p.report != nil {
				if p.badLines++; p.badLines == 1 {
					p.badLine = sc.Text()
				}
				continue
			}
			rec.Record(e)
		}
		_, _ = io.Copy(io.Discard, out)
		p.exitErr = cmd.Wait()
		p.exitMono = monoNow()
	}()
	return p, nil
}

// finish waits for the worker once the faults are healed (up to s's hold
// plus 3 s, then kills it), adds what went wrong with it to problems, and
// returns the error of a subject that never worked (see problems).
func (p *workerProc) finish(s scenario.Scenario, killed bool, problems *problemLog) error {
	p.wait(s.Hold.D() + 3*time.Second)
	list, err := p.problems(p.process == s.Lock.CrashAfterSetNX, killed)
	for _, msg := range list {
		problems.add("%s", msg)
	}
	return err
}

// problems says, once the worker was waited for, what went wrong with it:
// it died before reporting (unless crash says it was meant to die), or
// wrote lines that are not events; plus its subject's problems. It returns
// the error of a subject that never worked.
func (p *workerProc) problems(crash, killed bool) ([]string, error) {
	var out []string
	at := fmt.Sprintf("+%.3fs", float64(p.exitMono-p.startMono)/1e9)
	switch {
	case p.killed > 0:
		out = append(out, fmt.Sprintf("client %d's process did not finish within %v of the end of the trial and was killed", p.process, p.killed))
	case p.report == nil && crash && p.exitErr == nil:
		// It died in its first acquire, as crash_after_setnx asks.
	case p.report == nil && killed:
		// A kill-client step killed it, and saw it die.
	case killed:
		out = append(out, fmt.Sprintf("client %d was killed by a kill-client step but ran to the end", p.process))
	case p.report == nil && crash:
		out = append(out, fmt.Sprintf("client %d was to exit after its SETNX but died otherwise at %s (%v)", p.process, at, p.exitErr))
	case p.report == nil:
		out = append(out, fmt.Sprintf("client %d's process died at %s before the end of the trial (%v): its history is cut short", p.process, at, exitStatus(p.exitErr)))
	case crash:
		out = append(out, fmt.Sprintf("client %d was to exit after its SETNX (crash_after_setnx) but ran to the end", p.process))
	}
	if p.badLines > 0 {
		out = append(out, fmt.Sprintf("client %d's process wrote %d lines that are not events, e.g. %q", p.process, p.badLines, clip(p.badLine, 80)))
	}
	if p.report == nil {
		return out, nil
	}
	out = append(out, p.report.Problems...)
	if p.report.Unusable != "" {
		return out, errors.New(p.report.Unusable)
	}
	return out, nil
}

// The si_code of a child's wait event (see waitid(2)).
const (
	cldStopped   = 5 // CLD_STOPPED
	cldContinued = 6 // CLD_CONTINUED
)

// freezeProgram stops the lock program's process group pgid whenever the
// worker stops (a pause-client step's SIGSTOP, which reaches the worker
// alone: the program runs in a process group of its own), and continues it
// when the worker continues, until the worker exits. A lock program's own
// threads, such as one that renews its lease, thus freeze with the
// client, as a watchdog thread freezes in a stop-the-world pause. The
// runner, the worker's parent, hears of both from waitid(2) within
// microseconds; it never reaps the worker (cmd.Wait does).
func (p *workerProc) freezeProgram(pgid int) {
	pid := p.pid()
	for {
		// Wait for the worker's next stop, continue or exit, leaving it
		// waitable.
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WCONTINUED|unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || (info.Code != cldStopped && info.Code != cldContinued) {
			return // it exited (or was reaped)
		}
		// Take the stop or continue event, so the next wait waits.
		info = unix.Siginfo{}
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG, nil); err != nil {
			return
		}
		switch info.Code {
		case cldStopped:
			_ = syscall.Kill(-pgid, syscall.SIGSTOP)
		case cldContinued:
			_ = syscall.Kill(-pgid, syscall.SIGCONT)
		}
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (p *workerProc) pid() int { return p.cmd.Process.Pid }

// waitReady waits until the worker is up and waiting for the start signal.
func (p *workerProc) waitReady(timeout time.Duration) error {
	select {
	case <-p.ready:
		return nil
	case <-p.done:
		if p.notReady != "" {
			return fmt.Errorf("client %d: %s", p.process, p.notReady)
		}
		return errors.New("worker exited before it was ready")
	case <-time.After(timeout):
		return errors.New("worker not ready in time")
	}
}

// stop tells the worker the trial has ended, if it has not finished.
func (p *workerProc) stop() { _, _ = fmt.Fprintln(p.stdin, stopLine) }

// start tells the worker the trial began at startMono.
func (p *workerProc) start(startMono int64) error {
	p.startMono = startMono
	_, err := fmt.Fprintf(p.stdin, "go %d\n", startMono)
	return err
}

// wait resumes the worker if it is paused and waits up to grace for it to
// finish its last operation, then kills it (see problems).
func (p *workerProc) wait(grace time.Duration) {
	_ = faults.ResumePID(p.pid())
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.killed = grace
	}
}

// SilenceRedisLogs turns off go-redis's own log lines, process-wide. Faults
// break connections on purpose, and go-redis would log each one; the
// history records what matters.
func SilenceRedisLogs() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// clip returns s cut to n bytes, with an ellipsis if it was longer.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
