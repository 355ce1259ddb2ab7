package dockerbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/cluster"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// A memberImage says how the members of one kind (etcd, ZooKeeper) run:
// the image's program and, for the image, whether the log is written by
// the program itself or copied from its output.
type memberImage struct {
	ref        string   // the image, built by the backend
	entrypoint string   // the program inside it
	extraArgs  []string // appended to every run's arguments
	// follow copies what the container prints to the member's log as it
	// comes (a JVM's log is its stderr); without it, the program writes
	// the log itself and what it prints besides is appended to the log
	// when its container goes.
	follow bool
}

// memberPlace makes member name a container of the image that build
// builds (once per backend, remembered in *ref), on the host's network,
// with its folder Dir/name and its log Dir/name.log bind-mounted at the
// same paths. Each start of the member is a new container, removed when
// the member starts again, is released, or the backend closes.
func (b *Backend) memberPlace(ctx context.Context, name string, ref *string, build func(context.Context) (string, error), mi memberImage) (cluster.MemberPlace, error) {
	img, err := b.prepareMemberImage(ctx, ref, build)
	if err != nil {
		return cluster.MemberPlace{}, err
	}
	mi.ref = img
	pl := cluster.MemberPlace{Dir: filepath.Join(b.Dir, name), LogPath: filepath.Join(b.Dir, name+".log"),
		StartTimeout: b.StartTimeout, LazyDisk: b.LazyDisks}
	if pl.StartTimeout <= 0 {
		pl.StartTimeout = 30 * time.Second
	}
	r := &memberContainer{name: name, dir: pl.Dir, logPath: pl.LogPath, img: mi, b: b, api: b.api}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx.Err() != nil {
		return cluster.MemberPlace{}, cluster.ErrClosed
	}
	b.members = append(b.members, r)
	pl.Runner = r
	return pl, nil
}

// prepareMemberImage connects to the engine and builds (or finds) the
// image of a kind of member, once per backend.
func (b *Backend) prepareMemberImage(ctx context.Context, ref *string, build func(context.Context) (string, error)) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx.Err() != nil {
		return "", cluster.ErrClosed
	}
	if *ref != "" {
		return *ref, nil
	}
	if _, err := b.connectLocked(ctx); err != nil {
		return "", err
	}
	img, err := build(ctx)
	if err != nil {
		return "", err
	}
	*ref = img
	return img, nil
}

// A memberContainer runs one member (etcd, ZooKeeper) as a container, one
// container per run (see [Backend.memberPlace]).
type memberContainer struct {
	name, dir, logPath string
	img                memberImage
	b                  *Backend
	api                client.APIClient

	mu     sync.Mutex
	id     string        // the container of the last run, "" when none
	pid    int           // its process on this host, 0 when none
	copied chan struct{} // closed once its output is in the log (follow)
}

var _ cluster.MemberRunner = (*memberContainer)(nil)

// Run removes the last run's container, creates and starts a new one with
// args, and returns the host pid of its program. The engine is called
// without ctx's cancellation, so a Ctrl-C during a start cannot leave a
// container the engine made after lockpick gave up on it; once the
// container is tracked, a cancelled ctx removes it.
func (r *memberContainer) Run(ctx context.Context, args []string) (int, <-chan struct{}, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.removeLocked(); err != nil {
		return 0, nil, err
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dockerTimeout)
	defer cancel()
	id, err := r.create(dctx, args)
	if err != nil {
		return 0, nil, err
	}
	r.id = id
	trackContainer(id)
	if err := ctx.Err(); err != nil {
		_ = r.removeLocked()
		return 0, nil, err
	}
	if r.img.follow {
		if err := r.followLocked(dctx); err != nil {
			_ = r.removeLocked()
			return 0, nil, err
		}
	}
	if _, err := r.api.ContainerStart(dctx, id, client.ContainerStartOptions{}); err != nil {
		_ = r.removeLocked()
		return 0, nil, fmt.Errorf("start container: %w", err)
	}
	exited := r.b.stopped(r.api, id)
	insp, err := r.api.ContainerInspect(dctx, id, client.ContainerInspectOptions{})
	if err == nil && (insp.Container.State == nil || insp.Container.State.Pid == 0) {
		err = errors.New("the engine reports no pid (exited at once?)")
	}
	if err != nil {
		_ = r.removeLocked()
		<-exited
		return 0, nil, fmt.Errorf("inspect container: %w", err)
	}
	r.pid = insp.Container.State.Pid
	done := make(chan struct{})
	go func() {
		<-exited
		r.mu.Lock()
		if r.id == id {
			r.pid = 0
		}
		r.mu.Unlock()
		close(done)
	}()
	return insp.Container.State.Pid, done, nil
}

// create creates the container of one run, not yet started: the program
// with args as the calling user, on the host's network, the backend's
// folder bind-mounted at the same path.
func (r *memberContainer) create(ctx context.Context, args []string) (string, error) {
	labels := ownerLabels()
	labels[labelRun] = r.b.id
	labels[labelNode] = r.name
	name := "lockpick-" + r.b.id + "-" + r.name
	res, err := r.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image:      r.img.ref,
			Entrypoint: []string{r.img.entrypoint},
			Cmd:        append(append([]string{}, args...), r.img.extraArgs...),
			Labels:     labels,
			User:       strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()),
			WorkingDir: r.dir,
		},
		HostConfig: &container.HostConfig{NetworkMode: "host", Binds: []string{r.b.Dir + ":" + r.b.Dir}},
	})
	if err != nil {
		return "", fmt.Errorf("create container: %w", err)
	}
	return res.ID, nil
}

// followLocked attaches to the created container's output, before it
// starts (so nothing is missed, whatever the engine's log driver keeps),
// and copies it to the log until the container stops.
func (r *memberContainer) followLocked(ctx context.Context) error {
	att, err := r.api.ContainerAttach(ctx, r.id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return fmt.Errorf("attach container: %w", err)
	}
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		att.Close()
		return err
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		defer logf.Close()
		defer att.Close()
		_, _ = stdcopy.StdCopy(logf, logf, att.Reader)
	}()
	r.copied = copied
	return nil
}

// Signal sends sig to the container's program. SIGKILL goes straight from
// this host to its pid (the engine's kill takes its time, over 0.6 s seen
// on a busy machine, and a power loss must land when it is due), through
// the engine when that is refused; other signals go through the engine
// (`docker kill --signal`), which sends them from the host's pid
// namespace: SIGSTOP stops the program as on the process backend (its
// /proc state is T).
func (r *memberContainer) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	id, pid := r.id, r.pid
	r.mu.Unlock()
	if id == "" {
		return errors.New("no container")
	}
	if sig == syscall.SIGKILL && pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if _, err := r.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))}); err != nil {
		return fmt.Errorf("docker kill --signal %d %s: %w", sig, r.name, err)
	}
	return nil
}

// Release removes the last run's container. It is idempotent.
func (r *memberContainer) Release() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeLocked()
}

// removeLocked puts the container's output in the member's log and
// force-removes the container.
func (r *memberContainer) removeLocked() error {
	if r.id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if r.copied == nil {
		r.saveOutput(ctx)
	}
	if err := removeContainer(ctx, r.api, r.id); err != nil {
		return err
	}
	if r.copied != nil {
		// The stream ends with the container; bounded, for an engine
		// that keeps it open.
		select {
		case <-r.copied:
		case <-time.After(5 * time.Second):
		}
		r.copied = nil
	}
	r.id, r.pid = "", 0
	return nil
}

// saveOutput appends what the container printed outside the log file (a
// panic, a flag error) to the log.
func (r *memberContainer) saveOutput(ctx context.Context) {
	rc, err := r.api.ContainerLogs(ctx, r.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return
	}
	defer rc.Close()
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 64<<10))
	if out.Len() == 0 {
		return
	}
	if f, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		_, _ = f.Write(out.Bytes())
		_ = f.Close()
	}
}
