package dockerbackend

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/lockpick/lockpick/cluster"
)

// EtcdImageRepo is the repository of the images [BuildEtcdImage] builds;
// the tag is a hash of the image's content.
const EtcdImageRepo = "lockpick-etcd"

// imageEtcdBin is etcd's path inside the built image.
const imageEtcdBin = "/usr/bin/etcd"

// builtEtcd remembers the image built for each etcd binary, so a run of
// many trials hashes the binary once.
var builtEtcd = &imageCache[string]{}

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
	return builtEtcd.build(ctx, api, bin, EtcdImageRepo, func() (scratchImage, error) {
		return scratchImage{files: map[string]string{imageEtcdBin: bin}, bins: []string{bin},
			dockerfile: "LABEL lockpick.image=etcd\n" + `ENTRYPOINT ["` + imageEtcdBin + `"]` + "\n"}, nil
	})
}

// EtcdPlace makes member name a container of the image [BuildEtcdImage]
// builds from the host's etcd (whatever Image says, which is Redis's), on
// the host's network, with its folder Dir/name and its log Dir/name.log
// bind-mounted at the same paths. Each start of the member is a new
// container (its flags differ between a first start, a restart and a
// replacement), removed when the member is killed again or the backend
// closes.
func (b *Backend) EtcdPlace(ctx context.Context, name string) (cluster.MemberPlace, error) {
	// etcd's zap logger writes the log file itself; the container's own
	// output (a Go panic) is saved to the log when the container goes.
	mi := memberImage{entrypoint: imageEtcdBin, extraArgs: []string{"--log-outputs", filepath.Join(b.Dir, name+".log")}}
	return b.memberPlace(ctx, name, &b.etcdImage, func(ctx context.Context) (string, error) { return BuildEtcdImage(ctx, "") }, mi)
}
