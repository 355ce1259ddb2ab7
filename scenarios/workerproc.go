package scenarios

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/redis/go-redis/v9"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
)

// WorkerEnv is the environment variable that turns a lockpick binary (or a
// test binary) into one isolated client: it holds the worker's spec as JSON.
//
// Clients named in a scenario's isolate list run this way, as their own OS
// processes, so that pausing one (SIGSTOP) freezes all of it, its lease
// watchdog included, exactly like a stop-the-world GC pause.
const WorkerEnv = "LOCKPICK_WORKER"

// workerSpec is what an isolated client needs to play its part.
type workerSpec struct {
	Process   int      `json:"process"`
	Scenario  Scenario `json:"scenario"`
	View      View     `json:"view"`
	StartMono int64    `json:"start_mono"` // CLOCK_MONOTONIC ns when the trial began
}

// IsWorker reports whether this process was started as an isolated client.
func IsWorker() bool { return os.Getenv(WorkerEnv) != "" }

// ServeWorker runs the isolated client described by $LOCKPICK_WORKER,
// writing its events to w as JSON lines. It first writes "ready" and waits
// for the runner's "go <start>" on in, so the trial's clock starts only when
// every client is up, whatever exec took.
func ServeWorker(ctx context.Context, in io.Reader, w io.Writer) error {
	SilenceRedisLogs()
	var spec workerSpec
	if err := json.Unmarshal([]byte(os.Getenv(WorkerEnv)), &spec); err != nil {
		return fmt.Errorf("worker: bad spec: %w", err)
	}
	if _, err := fmt.Fprintln(w, "ready"); err != nil {
		return err
	}
	if _, err := fmt.Fscanf(in, "go %d\n", &spec.StartMono); err != nil {
		return fmt.Errorf("worker: no start signal: %w", err)
	}
	s := spec.Scenario.withDefaults()
	left := s.Duration.D() - time.Duration(monoNow()-spec.StartMono)
	ctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	tgt := newTarget(spec.View)
	defer tgt.close()
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	var werr error
	wk := &worker{process: spec.Process, s: s, late: time.Duration(monoNow() - spec.StartMono), subj: newSubject(SubjectConfig{tgt: tgt, Lock: s.Lock, Fenced: s.Fenced, Process: spec.Process}), mono: newMonoClock(s.Lock.skew(spec.Process)),
		emit: func(e checker.Event) {
			e.Time = monoNow()
			mu.Lock()
			defer mu.Unlock()
			if err := enc.Encode(e); err != nil && werr == nil {
				werr = err
			}
		}}
	if spec.View.Resource != "" {
		wk.res = &resourceClient{addr: spec.View.Resource}
	}
	wk.run(ctx)
	closeSubject(wk.subj)
	return werr
}

// A workerProc is an isolated client as seen by the runner.
type workerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ready chan struct{}
	done  chan struct{}
}

// startWorker starts an isolated client and feeds its events to rec.
func startWorker(spec workerSpec, rec *checker.Recorder, stderr io.Writer) (*workerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "worker")
	cmd.Env = append(os.Environ(), WorkerEnv+"="+string(b))
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
	p := &workerProc{cmd: cmd, stdin: stdin, ready: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		if sc.Scan() && sc.Text() == "ready" {
			close(p.ready)
		}
		for sc.Scan() {
			var e checker.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				rec.Record(e)
			}
		}
		_ = cmd.Wait()
	}()
	return p, nil
}

func (p *workerProc) pid() int { return p.cmd.Process.Pid }

// waitReady waits until the worker is up and waiting for the start signal.
func (p *workerProc) waitReady(timeout time.Duration) error {
	select {
	case <-p.ready:
		return nil
	case <-p.done:
		return errors.New("worker exited before it was ready")
	case <-time.After(timeout):
		return errors.New("worker not ready in time")
	}
}

// start tells the worker the trial began at startMono.
func (p *workerProc) start(startMono int64) error {
	_, err := fmt.Fprintf(p.stdin, "go %d\n", startMono)
	return err
}

// wait resumes the worker if it is paused and waits up to grace for it to
// finish its last operation, then kills it.
func (p *workerProc) wait(grace time.Duration) error {
	_ = cluster.ResumePID(p.pid())
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("worker did not stop in time and was killed")
	}
}

// SilenceRedisLogs turns off go-redis's own log lines, process-wide. Faults
// break connections on purpose, and go-redis would log each one; the
// history records what matters.
func SilenceRedisLogs() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
