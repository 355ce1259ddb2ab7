package dockerbackend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockpick/lockpick/cluster"

	"github.com/moby/moby/client"
)

// RunnerImageRepo is the repository of the images [BuildRunnerImage]
// builds; the tag is a hash of the image's content.
const RunnerImageRepo = "lockpick"

// Paths inside the runner image.
const (
	runnerBin      = "/usr/bin/lockpick"
	runnerCacheDir = "/var/cache" // $XDG_CACHE_HOME: lockpick's shim cache is <it>/lockpick
	runnerWorkDir  = "/work"      // the working folder: results/ lands in /work/results
)

// RunnerImageOptions configures [BuildRunnerImage].
type RunnerImageOptions struct {
	// Lockpick is the lockpick binary to copy into the image (with its
	// shared libraries, if it has any). default: this executable.
	Lockpick string
	// ServerBin and SentinelBin are the Redis binaries, as in
	// [RedisImageOptions]. default: redis-server and redis-sentinel from PATH.
	ServerBin, SentinelBin string
	// ClockShim is a clock shim built by [cluster.BuildClockShim]. It is copied
	// into lockpick's shim cache inside the image under the same name, so
	// scenarios that move clocks run without gcc. default: "" (those
	// scenarios then fail in the container, which has no compiler).
	ClockShim string
	// EtcdBin is the etcd server binary to copy into the image, for etcd
	// topologies. default: etcd from PATH if there is one; without it the
	// image has no etcd, and etcd scenarios fail in it with the reason.
	EtcdBin string

	_ struct{} // disallow positional literals, for extensibility
}

// BuildRunnerImage builds a FROM scratch image holding lockpick, the
// host's redis-server and redis-sentinel (and etcd, if it has one) with
// their shared libraries, and the clock shim, and returns its reference,
// RunnerImageRepo:<hash>. (Power loss needs /dev/fuse and CAP_SYS_ADMIN in
// the container, to mount lazy disks.) Its
// entrypoint is lockpick; the process backend runs the nodes inside the
// container, on the container's own loopback. Results go to /work/results
// (the working folder is /work), so a bind mount of a host folder there
// collects them. No registry is involved: the image is built from host
// files, and reused while they do not change.
func BuildRunnerImage(ctx context.Context, opt *RunnerImageOptions) (string, error) {
	var o RunnerImageOptions
	if opt != nil {
		o = *opt
	}
	var err error
	if o.Lockpick == "" {
		if o.Lockpick, err = os.Executable(); err != nil {
			return "", fmt.Errorf("cluster: runner image: %w", err)
		}
	}
	if o.Lockpick, err = filepath.EvalSymlinks(o.Lockpick); err != nil {
		return "", fmt.Errorf("%w: %v", cluster.ErrBinaryNotFound, err)
	}
	redis, err := redisBins(o.ServerBin, o.SentinelBin)
	if err != nil {
		return "", err
	}
	im := redis
	im.files[runnerBin] = o.Lockpick
	im.bins = append(im.bins, o.Lockpick)
	im.dirs = []string{"/tmp", runnerWorkDir}
	switch etcd, err := etcdBin(o.EtcdBin); {
	case err == nil:
		im.files[imageEtcdBin] = etcd
		im.bins = append(im.bins, etcd)
	case o.EtcdBin != "":
		return "", err // one asked for and missing; none on PATH leaves it out
	}
	if o.ClockShim != "" {
		im.files[filepath.Join(runnerCacheDir, "lockpick", filepath.Base(o.ClockShim))] = o.ClockShim
	}
	im.dockerfile = "ENV PATH=/usr/bin:/bin TMPDIR=/tmp HOME=/tmp XDG_CACHE_HOME=" + runnerCacheDir + "\n" +
		"WORKDIR " + runnerWorkDir + "\n" +
		"LABEL lockpick.image=runner\n" +
		`ENTRYPOINT ["` + runnerBin + `"]` + "\n" +
		`CMD ["--help"]` + "\n"
	api, err := engine(ctx)
	if err != nil {
		return "", err
	}
	return buildImage(ctx, api, RunnerImageRepo, im)
}

// TagImage gives the image ref a second name, e.g. "lockpick:latest".
func TagImage(ctx context.Context, ref, name string) error {
	api, err := engine(ctx)
	if err != nil {
		return err
	}
	if _, err := api.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: name}); err != nil {
		return fmt.Errorf("cluster: tag %s as %s: %w", ref, name, err)
	}
	return nil
}
