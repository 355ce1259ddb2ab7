package scenarios

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// ServeWorker runs the isolated client described by $LOCKPICK_WORKER until
// the trial's duration has passed, writing its events to w as JSON lines.
func ServeWorker(ctx context.Context, w io.Writer) error {
	var spec workerSpec
	if err := json.Unmarshal([]byte(os.Getenv(WorkerEnv)), &spec); err != nil {
		return fmt.Errorf("worker: bad spec: %w", err)
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
	wk := &worker{process: spec.Process, s: s, late: time.Duration(monoNow() - spec.StartMono), subj: subjects[s.Lock.Kind](subjectConfig{tgt: tgt, lock: s.Lock, fenced: s.Fenced, process: spec.Process}), mono: newMonoClock(s.Lock.skew(spec.Process)),
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
	return werr
}

// A workerProc is an isolated client as seen by the runner.
type workerProc struct {
	cmd  *exec.Cmd
	done chan struct{}
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
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %d: %w", spec.Process, err)
	}
	p := &workerProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
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
