package dockerbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster"

	"github.com/moby/moby/client"
)

// Backend runs redis-server and redis-sentinel in Docker containers,
// one container per process, through the engine's API (the moby client),
// so a test can run the Redis version of an image instead of the host's.
//
// Containers share the host's network namespace: a node listens on a
// reserved loopback port of the host exactly as a process would, so the
// in-process proxies, replication through a proxy and the sentinels'
// configuration work unchanged, and no Docker network is created. Dir is
// bind-mounted into every container at the same path, so configuration,
// data, logs and the clock file are the same files on both sides: LogPath
// works on the host, and a [cluster.Clock] moves a containerised node's clock
// through the same shim. Kill is `docker kill` (SIGKILL), Start is
// `docker start` of the same container, Pause is `docker pause` (the cgroup
// freezer, which stops every thread as SIGSTOP does). Containers run as the
// calling user, so every file they write stays removable.
//
// The backend removes its own containers (see dockerreap.go). It needs a
// Docker engine on this host (bind mounts and the host network): not
// Docker Desktop's VM, not a remote DOCKER_HOST.
type Backend struct {
	// Dir holds one subdirectory per process (config, data, clock file) and
	// the processes' logs; it is bind-mounted into every container.
	Dir string
	// Image is the Redis image to run, e.g. "redis:7.2"; it must provide
	// redis-server and redis-sentinel on its PATH, and is pulled if absent.
	// default: "" (an image built from the host's binaries by
	// [BuildRedisImage], once per content).
	Image string
	// ClockShim is the path of the clock shim library ([cluster.BuildClockShim]).
	// When set, every process runs with it preloaded, so its clock can be
	// moved with faults.ClockJumpFault and faults.ClockRateFault: the built image gets
	// a copy of it, a user's Image gets it bind-mounted, and a node in which
	// it does not load (a static or musl binary) fails to launch with
	// [cluster.ErrNoClockShim]. default: "" (no shim).
	ClockShim string
	// LazyDisks puts the data folder of every redis-server, etcd member
	// and ZooKeeper member on a lazy filesystem mounted on this host
	// ([cluster.NewDisk]), which the container sees through its bind mount
	// of Dir, so faults.PowerLossFault can drop what the node had not
	// synced.
	// default: false (plain folders).
	LazyDisks bool
	// ServerBin and SentinelBin are the host binaries the built image is
	// made of; unused with Image. default: redis-server and redis-sentinel
	// from PATH.
	ServerBin, SentinelBin string
	// StartTimeout bounds how long a container may take to answer PING
	// after `docker start`: a liveness bound, generous so that a loaded
	// machine never crosses it. default: 30s.
	StartTimeout time.Duration

	mu        sync.Mutex
	id        string
	image     string // the image containers run, once prepared
	etcdImage string // the image etcd members run, once prepared
	zkImage   string // the image ZooKeeper members run, once prepared
	api       *client.Client
	procs     []*dockerProc
	members   []*memberContainer // etcd and ZooKeeper members
	ctx       context.Context    // ends at Close, stopping container watchers
	cancel    context.CancelFunc
}

var (
	_ cluster.Backend          = (*Backend)(nil)
	_ cluster.EtcdBackend      = (*Backend)(nil)
	_ cluster.ZooKeeperBackend = (*Backend)(nil)
)

// New returns a docker backend that keeps its processes' files
// under dir. It does not contact the engine: the first Launch does, and
// returns an error wrapping [ErrNoDocker] if none answers.
func New(dir string) (*Backend, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	// The containers see Dir by this path: resolve symlinks, as the host
	// does.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Backend{Dir: abs, StartTimeout: 30 * time.Second, id: cluster.RandomID()[:12], ctx: ctx, cancel: cancel}
	return b, os.MkdirAll(abs, 0o755)
}

// ID returns the backend's random id. Its containers are named
// lockpick-<id>-<node> and carry the label lockpick.run=<id>, besides
// lockpick.node, and lockpick.host, lockpick.pid and lockpick.pid-start
// naming the process that owns them.
func (b *Backend) ID() string { return b.id }

// ImageRef returns the image the backend's containers run, or "" before
// the first Launch.
func (b *Backend) ImageRef() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.image
}

// prepare connects to the engine, removes orphans once per process and
// builds (or finds) the image.
func (b *Backend) prepare(ctx context.Context) (string, *client.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx.Err() != nil {
		return "", nil, cluster.ErrClosed
	}
	if b.image != "" {
		return b.image, b.api, nil
	}
	api, err := b.connectLocked(ctx)
	if err != nil {
		return "", nil, err
	}
	img := b.Image
	if img == "" {
		img, err = BuildRedisImage(ctx, &RedisImageOptions{ServerBin: b.ServerBin, SentinelBin: b.SentinelBin, ClockShim: b.ClockShim})
		if err != nil {
			return "", nil, err
		}
	} else if _, err := api.ImageInspect(ctx, img); err != nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := pullImage(pctx, api, img); err != nil {
			return "", nil, fmt.Errorf("cluster: image %s is not on this engine and could not be pulled: %w", img, err)
		}
	}
	b.image = img
	return img, api, nil
}

// connectLocked connects to the engine once, and removes orphans once per
// process.
func (b *Backend) connectLocked(ctx context.Context) (*client.Client, error) {
	if b.api != nil {
		return b.api, nil
	}
	api, err := engine(ctx)
	if err != nil {
		return nil, err
	}
	docker.orphans.Do(func() { _, _ = RemoveOrphanContainers(ctx) })
	b.api = api
	return api, nil
}

// pullImage pulls ref into the engine and returns once the pull is done.
func pullImage(ctx context.Context, api *client.Client, ref string) error {
	res, err := api.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	return res.Wait(ctx)
}

// Launch creates and starts a container for the process. With spec.Port
// zero it reserves a loopback port as the process backend does and keeps it
// until Close. A process that fails to start returns a *[cluster.StartError] whose
// log includes the container's own output.
func (b *Backend) Launch(ctx context.Context, spec cluster.ProcSpec) (cluster.Proc, error) {
	img, api, err := b.prepare(ctx)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.Dir, spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &dockerProc{name: spec.Name, dir: dir, config: spec.Config, sentinel: spec.Sentinel,
		logPath: filepath.Join(b.Dir, spec.Name+".log"), timeout: b.StartTimeout, b: b, api: api}
	if p.timeout <= 0 {
		p.timeout = 30 * time.Second
	}
	if p.disk, err = cluster.NewDisk(filepath.Join(dir, "data"), spec.Name, cluster.LazyIf(b.LazyDisks && !spec.Sentinel)); err != nil {
		return nil, &cluster.StartError{Node: p.name, LogPath: p.logPath, Err: err}
	}
	if b.ClockShim != "" {
		if p.clock, err = cluster.NewClock(filepath.Join(dir, "clock")); err != nil {
			_ = p.disk.Close()
			return nil, &cluster.StartError{Node: p.name, LogPath: p.logPath, Err: err}
		}
	}
	if err := p.create(ctx, img); err != nil {
		_ = p.disk.Close()
		return nil, err
	}
	b.mu.Lock()
	closed := b.ctx.Err() != nil
	if !closed {
		b.procs = append(b.procs, p)
	}
	b.mu.Unlock()
	if closed {
		p.remove()
		return nil, cluster.ErrClosed
	}
	p.port, p.reservation, err = cluster.StartOnPort(spec.Port, p.logPath, func(port int) error {
		p.port = port
		return p.Start(ctx)
	})
	if err == nil && p.clock != nil {
		err = p.checkShim(ctx)
	}
	if err != nil {
		p.remove()
		return nil, err
	}
	return p, nil
}

// Close removes every container the backend created (etcd and ZooKeeper
// members' too) and releases their ports. It is idempotent.
func (b *Backend) Close() error {
	b.mu.Lock()
	procs, members := b.procs, b.members
	b.procs, b.members = nil, nil
	b.mu.Unlock()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range procs {
		wg.Go(func() {
			if err := p.remove(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	for _, r := range members {
		wg.Go(func() {
			if err := r.Release(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.cancel()
	return errors.Join(errs...)
}
