package faults_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

func TestPauseFault_AnswersNothingUntilResumed(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{})
	ctx := context.Background()
	n := c.Nodes[0]
	f := &faults.PauseFault{}
	testcluster.Inject(t, f, n)
	t.Cleanup(func() { testcluster.Heal(t, f, n) })

	probe := testcluster.Client(t, n.Addr(), 300*time.Millisecond)
	if err := probe.Ping(ctx).Err(); !testcluster.IsTimeout(err) {
		t.Fatalf("PING to a paused node: err=%v, want a timeout", err)
	}
	// A request sent during the pause is answered only after the resume.
	patient := testcluster.Client(t, n.Addr(), 10*time.Second)
	answered := make(chan time.Time, 1)
	go func() {
		if err := patient.Set(ctx, "k", "v", 0).Err(); err == nil {
			answered <- time.Now()
		}
		close(answered)
	}()
	select {
	case <-answered:
		t.Fatal("a paused node answered SET")
	case <-time.After(300 * time.Millisecond):
	}
	resumed := time.Now()
	testcluster.Heal(t, f, n)
	select {
	case at, ok := <-answered:
		if !ok {
			t.Fatal("SET failed after the resume")
		}
		if at.Before(resumed) {
			t.Fatalf("SET answered at %v, before the resume at %v", at, resumed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SET not answered within 5s of the resume")
	}
}

func TestProcessPauseFault_FreezesWholeProcess(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=ticker")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Each tick carries the time the child printed it.
	ticks := make(chan time.Time, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ns, _ := strconv.ParseInt(sc.Text(), 10, 64)
			ticks <- time.Unix(0, ns)
		}
		close(ticks)
	}()
	<-ticks

	f := &faults.ProcessPauseFault{PID: cmd.Process.Pid}
	paused := time.Now()
	testcluster.Inject(t, f, nil)
	// Ticks printed before the pause may still be in the pipe. Allow 20ms
	// for SIGSTOP to reach a thread running on another CPU.
	deadline := time.After(500 * time.Millisecond)
	for waiting := true; waiting; {
		select {
		case at := <-ticks:
			if at.Sub(paused) > 20*time.Millisecond {
				t.Fatalf("paused process ticked %v after the pause", at.Sub(paused))
			}
		case <-deadline:
			waiting = false
		}
	}
	testcluster.Heal(t, f, nil)
	testcluster.Heal(t, f, nil) // resuming twice is harmless
	resumed := time.Now()
	for {
		select {
		case at := <-ticks:
			if at.After(resumed) {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("process did not tick within 5s of the resume")
		}
	}
}

func TestPausePID_RejectsBadPID(t *testing.T) {
	t.Parallel()
	if err := faults.PausePID(0); err == nil {
		t.Fatal("PausePID(0) succeeded")
	}
}
