package cluster

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/testcontainers/testcontainers-go"
)

// RedisImageRepo is the repository of the images [BuildRedisImage] builds;
// the tag is a hash of the image's content.
const RedisImageRepo = "lockpick-redis"

// Paths inside the built image. The shim path is also where the docker
// backend bind-mounts the shim into an image of the user's choice.
const (
	imageServerBin   = "/usr/bin/redis-server"
	imageSentinelBin = "/usr/bin/redis-sentinel"
	imageClockShim   = "/lockpick/clockshim.so"
)

// RedisImageOptions configures [BuildRedisImage].
type RedisImageOptions struct {
	// ServerBin and SentinelBin are the host binaries copied into the image,
	// with every shared library ldd lists for them. A SentinelBin that
	// resolves to the same file as ServerBin (Debian's redis-sentinel is a
	// symlink to it) becomes a symlink in the image.
	// default: redis-server and redis-sentinel from PATH.
	ServerBin, SentinelBin string
	// ClockShim is the clock shim library ([BuildClockShim]) to copy into
	// the image. default: "" (an image without the shim).
	ClockShim string

	_ struct{} // disallow positional literals, for extensibility
}

// builtImages serializes builds of one tag, and remembers which tag the
// options of each earlier call gave, so that a run of many trials reads and
// hashes the binaries once (the host's binaries are not expected to change
// under a running lockpick).
var builtImages = struct {
	mu     sync.Mutex
	tags   map[string]*sync.Mutex
	byOpts map[RedisImageOptions]string
}{tags: map[string]*sync.Mutex{}, byOpts: map[RedisImageOptions]string{}}

// BuildRedisImage builds a FROM scratch image holding the host's
// redis-server and redis-sentinel, their shared libraries (as ldd lists
// them, at the same paths) and optionally the clock shim, and returns its
// reference, RedisImageRepo:<hash of the build context>. An image with that
// tag already present in the engine is reused, so the build happens once per
// content, not once per run. It returns [ErrBinaryNotFound] when a binary or
// ldd is missing, an error wrapping [ErrNoDocker] when no engine answers,
// and the builder's output with any build error.
func BuildRedisImage(ctx context.Context, opt *RedisImageOptions) (string, error) {
	var o RedisImageOptions
	if opt != nil {
		o = *opt
	}
	p, err := dockerProvider(ctx)
	if err != nil {
		return "", err
	}
	builtImages.mu.Lock()
	ref, ok := builtImages.byOpts[o]
	builtImages.mu.Unlock()
	if ok {
		if _, err := p.Client().ImageInspect(ctx, ref); err == nil {
			return ref, nil
		}
	}
	archive, err := redisImageContext(o)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(archive)
	tag := hex.EncodeToString(sum[:])[:16]
	ref = RedisImageRepo + ":" + tag

	builtImages.mu.Lock()
	mu, ok := builtImages.tags[ref]
	if !ok {
		mu = new(sync.Mutex)
		builtImages.tags[ref] = mu
	}
	builtImages.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	remember := func() {
		builtImages.mu.Lock()
		builtImages.byOpts[o] = ref
		builtImages.mu.Unlock()
	}
	if _, err := p.Client().ImageInspect(ctx, ref); err == nil {
		remember()
		return ref, nil
	}
	var log bytes.Buffer
	_, err = p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		ContextArchive: bytes.NewReader(archive),
		Repo:           RedisImageRepo,
		Tag:            tag,
		KeepImage:      true,
		BuildLogWriter: &log,
	}})
	if err != nil {
		return "", fmt.Errorf("cluster: build image %s: %w\n%s", ref, err, strings.TrimSpace(log.String()))
	}
	remember()
	return ref, nil
}

// redisImageContext returns the build context of the image as a tar
// archive whose bytes depend only on the files' contents, so its hash names
// the image.
func redisImageContext(o RedisImageOptions) ([]byte, error) {
	var err error
	if o.ServerBin == "" {
		if o.ServerBin, err = exec.LookPath("redis-server"); err != nil {
			return nil, fmt.Errorf("%w: redis-server (apt-get install redis-server)", ErrBinaryNotFound)
		}
	}
	if o.SentinelBin == "" {
		if o.SentinelBin, err = exec.LookPath("redis-sentinel"); err != nil {
			return nil, fmt.Errorf("%w: redis-sentinel (apt-get install redis-sentinel)", ErrBinaryNotFound)
		}
	}
	server, err := filepath.EvalSymlinks(o.ServerBin)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBinaryNotFound, err)
	}
	sentinel, err := filepath.EvalSymlinks(o.SentinelBin)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBinaryNotFound, err)
	}

	files := map[string]string{imageServerBin: server} // image path -> host path
	bins := []string{server}
	if sentinel != server {
		files[imageSentinelBin] = sentinel
		bins = append(bins, sentinel)
	}
	if o.ClockShim != "" {
		files[imageClockShim] = o.ClockShim
	}
	libDirs := map[string]bool{}
	for _, bin := range bins {
		libs, err := sharedLibs(bin)
		if err != nil {
			return nil, err
		}
		for _, l := range libs {
			files[l] = l
			libDirs[path.Dir(l)] = true
		}
	}
	dirs := slices.Sorted(func(yield func(string) bool) {
		for d := range libDirs {
			if !yield(d) {
				return
			}
		}
	})
	dockerfile := "FROM scratch\n" +
		"COPY rootfs/ /\n" +
		"ENV LD_LIBRARY_PATH=" + strings.Join(dirs, ":") + "\n" +
		"LABEL lockpick.image=redis\n" +
		`ENTRYPOINT ["` + imageServerBin + `"]` + "\n"

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(hdr *tar.Header, body []byte) error {
		hdr.Format = tar.FormatPAX
		hdr.Size = int64(len(body))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Typeflag: tar.TypeReg}, []byte(dockerfile)); err != nil {
		return nil, err
	}
	seenDir := map[string]bool{}
	for _, dst := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, d := range parentDirs(dst) {
			if !seenDir[d] {
				seenDir[d] = true
				if err := add(&tar.Header{Name: "rootfs" + d + "/", Mode: 0o755, Typeflag: tar.TypeDir}, nil); err != nil {
					return nil, err
				}
			}
		}
		body, err := os.ReadFile(files[dst])
		if err != nil {
			return nil, fmt.Errorf("cluster: image context: %w", err)
		}
		if err := add(&tar.Header{Name: "rootfs" + dst, Mode: 0o755, Typeflag: tar.TypeReg}, body); err != nil {
			return nil, err
		}
	}
	if sentinel == server {
		// redis-server runs as a sentinel when called redis-sentinel.
		hdr := &tar.Header{Name: "rootfs" + imageSentinelBin, Linkname: path.Base(imageServerBin), Mode: 0o777, Typeflag: tar.TypeSymlink}
		if err := add(hdr, nil); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parentDirs returns "/a", "/a/b" for "/a/b/c".
func parentDirs(p string) []string {
	var out []string
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}

// sharedLibs returns the absolute paths ldd lists for bin, including the
// program interpreter named in the ELF header.
func sharedLibs(bin string) ([]string, error) {
	var libs []string
	if f, err := elf.Open(bin); err == nil {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b := make([]byte, p.Filesz)
				if _, err := p.ReadAt(b, 0); err == nil {
					libs = append(libs, strings.TrimRight(string(b), "\x00"))
				}
			}
		}
		f.Close()
	}
	ldd, err := exec.LookPath("ldd")
	if err != nil {
		return nil, fmt.Errorf("%w: ldd (apt-get install libc-bin)", ErrBinaryNotFound)
	}
	out, err := exec.Command(ldd, bin).Output()
	if err != nil {
		return nil, fmt.Errorf("cluster: ldd %s: %w", bin, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
		// "/lib64/ld-linux-x86-64.so.2 (0x...)"; vdso has no path.
		line := strings.TrimSpace(sc.Text())
		if _, after, ok := strings.Cut(line, "=> "); ok {
			line = after
		}
		p, _, _ := strings.Cut(line, " ")
		if strings.HasPrefix(p, "/") && !slices.Contains(libs, p) {
			libs = append(libs, p)
		}
	}
	if strings.Contains(string(out), "not found") {
		return nil, fmt.Errorf("cluster: ldd %s: a library is missing:\n%s", bin, out)
	}
	return libs, nil
}
