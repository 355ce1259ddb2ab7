package dockerbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// EtcdImageRepo is the repository of the images [BuildEtcdImage] builds;
// the tag is a hash of the image's content.
const EtcdImageRepo = "lockpick-etcd"

// imageEtcdBin is etcd's path inside the built image.
const imageEtcdBin = "/usr/bin/etcd"

// builtEtcd remembers the image built for each etcd binary, so a run of
// many trials hashes the binary once.
var builtEtcd = struct {
	mu    sync.Mutex
	byBin map[string]string
}{byBin: map[string]string{}}

// etcdBin returns bin, or etcd from PATH for "", resolved through its
// symbolic links, or an error wrapping [cluster.ErrBinaryNotFound].
func etcdBin(bin string) (string, error) {
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("etcd"); err != nil {
			return "", fmt.Errorf("%w: etcd (apt-get install etcd-server)", cluster.ErrBinaryNotFound)
		}
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", fmt.Errorf("%w: %v", cluster.ErrBinaryNotFound, err)
	}
	return real, nil
}

// BuildEtcdImage builds a FROM scratch image holding the host's etcd
// (bin; default: etcd from PATH) and its shared libraries, and returns its
// reference, EtcdImageRepo:<hash of the build context>; an image with that
// tag already in the engine is reused. No registry is involved. It returns
// [cluster.ErrBinaryNotFound] when etcd or ldd is missing and an error
// wrapping [ErrNoDocker] when no engine answers.
func BuildEtcdImage(ctx context.Context, bin string) (string, error) {
	bin, err := etcdBin(bin)
	if err != nil {
		return "", err
	}
	api, err := engine(ctx)
	if err != nil {
		return "", err
	}
	builtEtcd.mu.Lock()
	ref, ok := builtEtcd.byBin[bin]
	builtEtcd.mu.Unlock()
	if ok {
		if _, err := api.ImageInspect(ctx, ref); err == nil {
			return ref, nil
		}
	}
	im := scratchImage{files: map[string]string{imageEtcdBin: bin}, bins: []string{bin},
		dockerfile: "LABEL lockpick.image=etcd\n" + `ENTRYPOINT ["` + imageEtcdBin + `"]` + "\n"}
	archive, err := im.context()
	if err != nil {
		return "", err
	}
	if ref, err = buildImage(ctx, api, EtcdImageRepo, archive); err != nil {
		return "", err
	}
	builtEtcd.mu.Lock()
	builtEtcd.byBin[bin] = ref
	builtEtcd.mu.Unlock()
	return ref, nil
}

// EtcdPlace makes member name a container of the image [BuildEtcdImage]
// builds from the host's etcd (whatever Image says, which is Redis's), on
// the host's network, with its folder Dir/name and its log Dir/name.log
// bind-mounted at the same paths. Each start of the member is a new
// container (its flags differ between a first start, a restart and a
// replacement), removed when the member is killed again or the backend
// closes.
func (b *Backend) EtcdPlace(ctx context.Context, name string) (cluster.EtcdPlace, error) {
	img, err := b.prepareEtcd(ctx)
	if err != nil {
		return cluster.EtcdPlace{}, err
	}
	pl := cluster.EtcdPlace{Dir: filepath.Join(b.Dir, name), LogPath: filepath.Join(b.Dir, name+".log"),
		StartTimeout: b.StartTimeout, LazyDisk: b.LazyDisks}
	if pl.StartTimeout <= 0 {
		pl.StartTimeout = 30 * time.Second
	}
	r := &etcdContainer{name: name, dir: pl.Dir, logPath: pl.LogPath, image: img, b: b, api: b.api}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx.Err() != nil {
		return cluster.EtcdPlace{}, cluster.ErrClosed
	}
	b.etcd = append(b.etcd, r)
	pl.Runner = r
	return pl, nil
}

// prepareEtcd connects to the engine and builds (or finds) the etcd image.
func (b *Backend) prepareEtcd(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx.Err() != nil {
		return "", cluster.ErrClosed
	}
	if b.etcdImage != "" {
		return b.etcdImage, nil
	}
	if _, err := b.connectLocked(ctx); err != nil {
		return "", err
	}
	img, err := BuildEtcdImage(ctx, "")
	if err != nil {
		return "", err
	}
	b.etcdImage = img
	return img, nil
}

// An etcdContainer runs one etcd member as a container, one container per
// run (see [Backend.EtcdPlace]).
type etcdContainer struct {
	name, dir, logPath, image string
	b                         *Backend
	api                       client.APIClient

	mu sync.Mutex
	id string // the container of the last run, "" when none
}

var _ cluster.EtcdRunner = (*etcdContainer)(nil)

// Run removes the last run's container, creates and starts a new one with
// args, and returns the host pid of its etcd. The engine is called
// without ctx's cancellation, so a Ctrl-C during a start cannot leave a
// container the engine made after lockpick gave up on it; once the
// container is tracked, a cancelled ctx removes it.
func (r *etcdContainer) Run(ctx context.Context, args []string) (int, <-chan struct{}, error) {
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
	if _, err := r.api.ContainerStart(dctx, id, client.ContainerStartOptions{}); err != nil {
		_ = r.removeLocked()
		return 0, nil, fmt.Errorf("start container: %w", err)
	}
	exited := r.watch(id)
	insp, err := r.api.ContainerInspect(dctx, id, client.ContainerInspectOptions{})
	if err == nil && (insp.Container.State == nil || insp.Container.State.Pid == 0) {
		err = errors.New("the engine reports no pid (exited at once?)")
	}
	if err != nil {
		_ = r.removeLocked()
		<-exited
		return 0, nil, fmt.Errorf("inspect container: %w", err)
	}
	return insp.Container.State.Pid, exited, nil
}

// create creates the container of one run, not yet started: etcd with
// args as the calling user, on the host's network, the backend's folder
// bind-mounted at the same path.
func (r *etcdContainer) create(ctx context.Context, args []string) (string, error) {
	labels := ownerLabels()
	labels[labelRun] = r.b.id
	labels[labelNode] = r.name
	// etcd's zap logger writes the log file itself; the container's own
	// output (a Go panic) is saved to the log when the container goes.
	cmd := append(append([]string{}, args...), "--log-outputs", r.logPath)
	res, err := r.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: "lockpick-" + r.b.id + "-" + r.name,
		Config: &container.Config{
			Image:      r.image,
			Entrypoint: []string{imageEtcdBin},
			Cmd:        cmd,
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

// watch returns a channel closed when container id stops running (or is
// removed, or the backend closes).
func (r *etcdContainer) watch(id string) <-chan struct{} { return r.b.stopped(r.api, id) }

// Signal sends sig to the container's etcd through the engine (`docker
// kill --signal`), which signals it from the host's pid namespace: SIGSTOP
// stops it as on the process backend (its /proc state is T), and SIGKILL
// kills it stopped or not.
func (r *etcdContainer) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	id := r.id
	r.mu.Unlock()
	if id == "" {
		return errors.New("no container")
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if _, err := r.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))}); err != nil {
		return fmt.Errorf("docker kill --signal %d %s: %w", sig, r.name, err)
	}
	return nil
}

// Release removes the last run's container. It is idempotent.
func (r *etcdContainer) Release() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeLocked()
}

// removeLocked saves the container's own output to the member's log and
// force-removes the container.
func (r *etcdContainer) removeLocked() error {
	if r.id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	r.saveOutput(ctx)
	if err := removeContainer(ctx, r.api, r.id); err != nil {
		return err
	}
	r.id = ""
	return nil
}

// saveOutput appends what the container printed outside the log file (a
// panic, a flag error) to the log.
func (r *etcdContainer) saveOutput(ctx context.Context) {
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
