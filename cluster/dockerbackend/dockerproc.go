package dockerbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/cluster/netlink"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// A dockerProc is one container running one redis-server or redis-sentinel.
type dockerProc struct {
	name, dir, logPath string
	config             []string
	sentinel           bool
	disk               *cluster.Disk
	port               int
	reservation        *netlink.PortReservation
	clock              *cluster.Clock
	timeout            time.Duration
	b                  *Backend
	api                client.APIClient

	mu     sync.Mutex
	id     string        // the container's id, once created
	exited chan struct{} // nil while stopped; closed when the container stops
	paused bool
	pid    int // the running container's process on this host, 0 if unknown
}

var (
	_ cluster.Proc        = (*dockerProc)(nil)
	_ cluster.ClockedProc = (*dockerProc)(nil)
	_ cluster.DurableProc = (*dockerProc)(nil)
)

func (p *dockerProc) Name() string    { return p.name }
func (p *dockerProc) Addr() string    { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }
func (p *dockerProc) LogPath() string { return p.logPath }

// Clock returns the process's clock, or nil when the backend has no ClockShim.
func (p *dockerProc) Clock() *cluster.Clock { return p.clock }

// create creates the container, not yet started.
func (p *dockerProc) create(ctx context.Context, img string) error {
	conf := filepath.Join(p.dir, "redis.conf")
	bin := "redis-server"
	if p.sentinel {
		bin = "redis-sentinel"
	}
	if p.b.Image == "" {
		bin = imageServerBin
		if p.sentinel {
			bin = imageSentinelBin
		}
	}
	cmd := []string{conf}
	if p.sentinel {
		cmd = append(cmd, "--sentinel")
	}
	var env []string
	binds := []string{p.b.Dir + ":" + p.b.Dir}
	var preload []string
	if p.clock != nil {
		preload = append(preload, imageClockShim)
		env = append(env, "LOCKPICK_CLOCK_FILE="+p.clock.Path())
		if p.b.Image != "" {
			binds = append(binds, p.b.ClockShim+":"+imageClockShim+":ro")
		}
	}
	if preload != nil {
		env = append(env, "LD_PRELOAD="+strings.Join(preload, " "))
	}
	labels := ownerLabels()
	labels[labelRun] = p.b.id
	labels[labelNode] = p.name
	name := "lockpick-" + p.b.id + "-" + p.name
	// Created without ctx's cancellation: a create the client gave up on
	// (Ctrl-C) could still finish in the engine after the remove by name
	// below found nothing, and leave an untracked container (seen after 4
	// of 16 SIGINTs 0.15-0.6 s into a docker run). A cancelled start then
	// removes the tracked container (see Launch).
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), dockerTimeout)
	defer ccancel()
	res, err := p.api.ContainerCreate(cctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image:      img,
			Entrypoint: []string{bin},
			Cmd:        cmd,
			Env:        env,
			Labels:     labels,
			User:       strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()),
			WorkingDir: p.dir,
		},
		HostConfig: &container.HostConfig{NetworkMode: "host", Binds: binds},
	})
	if err != nil {
		// The engine may have created the container although the call
		// failed: remove it by name.
		rctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
		defer cancel()
		_ = removeContainer(rctx, p.api, name)
		return &cluster.StartError{Node: p.name, LogPath: p.logPath, Err: fmt.Errorf("create container: %w", err)}
	}
	p.id = res.ID
	trackContainer(res.ID)
	return nil
}

func (p *dockerProc) writeConfig() error {
	_, err := cluster.WriteRedisConfig(p.dir, p.disk.Path, p.port, p.logPath, p.sentinel, p.config)
	return err
}

// Start starts the stopped container again (`docker start`) and waits
// until the process answers PING. A running container is left alone; one
// that exited on its own is started again.
func (p *dockerProc) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited != nil {
		select {
		case <-p.exited:
			p.exited, p.paused = nil, false
		default:
			return nil
		}
	}
	if err := p.writeConfig(); err != nil {
		return p.startError(ctx, err)
	}
	if _, err := p.api.ContainerStart(ctx, p.id, client.ContainerStartOptions{}); err != nil {
		return p.startError(ctx, err)
	}
	p.exited = p.watch()
	if err := cluster.WaitReady(ctx, p.Addr(), p.timeout, p.exited); err != nil {
		p.killLocked()
		return p.startError(ctx, err)
	}
	p.pid, _ = p.enginePID(ctx) // 0 if unknown: Kill goes through the engine alone
	return nil
}

// watch returns a channel closed when the running container stops (or the
// backend closes).
func (p *dockerProc) watch() chan struct{} { return p.b.stopped(p.api, p.id) }

// stopped returns a channel closed when container id stops running (or is
// removed, or the backend closes).
func (b *Backend) stopped(api client.APIClient, id string) chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		w := api.ContainerWait(b.ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case <-w.Result:
		case <-w.Error:
		}
	}()
	return ch
}

// startError appends the container's own output (ld.so complaints, config
// errors printed before the logfile directive is read) to the log and
// returns a *StartError with its tail.
func (p *dockerProc) startError(ctx context.Context, err error) error {
	if out := p.containerOutput(ctx); len(out) > 0 {
		if f, ferr := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
			_, _ = f.Write(out)
			_ = f.Close()
		}
	}
	return &cluster.StartError{Node: p.name, LogPath: p.logPath, Err: err, LogTail: cluster.LogTail(p.logPath, 5)}
}

// containerOutput returns what the container printed to stdout and stderr.
func (p *dockerProc) containerOutput(ctx context.Context) []byte {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
	}
	rc, err := p.api.ContainerLogs(ctx, p.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil
	}
	defer rc.Close()
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 64<<10))
	return bytes.TrimSpace(out.Bytes())
}

// checkShim returns an error wrapping [cluster.ErrNoClockShim] unless the running
// process has mapped its clock file, which the shim does on the first clock
// read (Redis reads the clock long before it answers PING). It fails
// closed: when the process's memory map cannot be read (an engine in
// another pid namespace or VM), the error says so, since clock faults on
// an unchecked node could do nothing unnoticed.
func (p *dockerProc) checkShim(ctx context.Context) error {
	pid, err := p.enginePID(ctx)
	if err != nil {
		return fmt.Errorf("%w: cannot check that %s loaded it: %v", cluster.ErrNoClockShim, p.name, err)
	}
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return fmt.Errorf("%w: cannot check that %s loaded it: %v (is the docker engine on another host or VM?)",
			cluster.ErrNoClockShim, p.name, err)
	}
	if bytes.Contains(maps, []byte(p.clock.Path())) {
		return nil
	}
	why := "the image's redis may be static, use another C library than this host's, or ignore LD_PRELOAD"
	if out := p.containerOutput(ctx); len(out) > 0 {
		why = string(out)
	}
	return fmt.Errorf("%w: %s in image %s did not load %s (%s); clock faults need the image lockpick builds from this host's redis (no --image)",
		cluster.ErrNoClockShim, p.name, p.b.Image, p.b.ClockShim, why)
}

// enginePID returns the host pid of the container's process, as the
// engine reports it.
func (p *dockerProc) enginePID(ctx context.Context) (int, error) {
	insp, err := p.api.ContainerInspect(ctx, p.id, client.ContainerInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("inspect: %v", err)
	}
	if insp.Container.State == nil || insp.Container.State.Pid == 0 {
		return 0, errors.New("the engine reports no pid")
	}
	return insp.Container.State.Pid, nil
}

// Disk returns the node's data folder, on this host, bind-mounted.
func (p *dockerProc) Disk() *cluster.Disk { return p.disk }

// Kill kills the container with SIGKILL (`docker kill`) and waits until it
// has stopped. A paused container is thawed first, so it dies at once.
func (p *dockerProc) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killLocked()
}

func (p *dockerProc) killLocked() error {
	if p.exited == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	id := p.id
	if p.paused {
		_, _ = p.api.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	}
	if p.pid > 0 {
		// At once, from this host: the engine's kill takes its time (over
		// 0.6 s seen on a busy machine), and a power loss must land when
		// it is due, before the node's next fsync.
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		p.pid = 0
	}
	_, err := p.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
	select {
	case <-p.exited:
	case <-ctx.Done():
		return fmt.Errorf("cluster: kill %s: %w (kill: %v)", p.name, ctx.Err(), err)
	}
	p.exited, p.paused = nil, false
	return nil
}

// Pause freezes the container (`docker pause`). It returns [cluster.ErrNotRunning]
// when the container is stopped.
func (p *dockerProc) Pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return fmt.Errorf("%w: %s", cluster.ErrNotRunning, p.name)
	}
	if p.paused {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if _, err := p.api.ContainerPause(ctx, p.id, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("cluster: pause %s: %w", p.name, err)
	}
	p.paused = true
	return nil
}

// Resume thaws a paused container (`docker unpause`); a running container
// that is not paused is left alone. It returns [cluster.ErrNotRunning] when the
// container is stopped.
func (p *dockerProc) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return fmt.Errorf("%w: %s", cluster.ErrNotRunning, p.name)
	}
	if !p.paused {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if _, err := p.api.ContainerUnpause(ctx, p.id, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("cluster: resume %s: %w", p.name, err)
	}
	p.paused = false
	return nil
}

func (p *dockerProc) runningLocked() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// WipeData removes the process's persisted data, which lives in the
// bind-mounted directory on the host.
func (p *dockerProc) WipeData() error { return p.disk.Wipe() }

// releasePort gives up the port reservation; [cluster.Cluster.Close] calls it.
func (p *dockerProc) releasePort() {
	if p.reservation != nil {
		p.reservation.Release()
	}
}

// remove force-removes the container and releases the port. It is
// idempotent.
func (p *dockerProc) remove() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.releasePort()
	if p.id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if err := removeContainer(ctx, p.api, p.id); err != nil {
		return err
	}
	p.exited, p.paused = nil, false
	return p.disk.Close()
}
