package dockerbackend

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/lockpick/lockpick/cluster"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
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
	// ClockShim is the clock shim library ([cluster.BuildClockShim]) to copy into
	// the image. default: "" (an image without the shim).
	ClockShim string

	_ struct{} // disallow positional literals, for extensibility
}

// builtRedis remembers the image the options of each earlier call gave,
// so that a run of many trials reads and hashes the binaries once (the
// host's binaries are not expected to change under a running lockpick).
var builtRedis = &imageCache[RedisImageOptions]{}

// tagLocks serializes builds of one tag.
var tagLocks = struct {
	mu   sync.Mutex
	tags map[string]*sync.Mutex
}{tags: map[string]*sync.Mutex{}}

// BuildRedisImage builds a FROM scratch image holding the host's
// redis-server and redis-sentinel, their shared libraries (as ldd lists
// them, at the same paths) and optionally the clock shim, and returns its
// reference, RedisImageRepo:<hash of the build context>. An image with that
// tag already present in the engine is reused, so the build happens once per
// content, not once per run. It returns [cluster.ErrBinaryNotFound] when a binary or
// ldd is missing, an error wrapping [ErrNoDocker] when no engine answers,
// and the builder's output with any build error.
func BuildRedisImage(ctx context.Context, opt *RedisImageOptions) (string, error) {
	var o RedisImageOptions
	if opt != nil {
		o = *opt
	}
	api, err := engine(ctx)
	if err != nil {
		return "", err
	}
	return builtRedis.build(ctx, api, o, RedisImageRepo, func() (scratchImage, error) { return redisImage(o) })
}

// buildImage builds im as repo:<hash of its build context>, unless the
// engine has it already, and returns its reference. The build context (a
// tar archive whose bytes depend only on the files' contents) is written
// twice, to the hash and then to the engine, never held in memory: a JVM's
// is near 200 MB.
func buildImage(ctx context.Context, api *client.Client, repo string, im scratchImage) (string, error) {
	lay, err := im.layout()
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	if err := lay.write(sum); err != nil {
		return "", err
	}
	tag := hex.EncodeToString(sum.Sum(nil))[:16]
	ref := repo + ":" + tag

	tagLocks.mu.Lock()
	mu, ok := tagLocks.tags[ref]
	if !ok {
		mu = new(sync.Mutex)
		tagLocks.tags[ref] = mu
	}
	tagLocks.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if _, err := api.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	pr, pw := io.Pipe()
	wrote := make(chan struct{})
	go func() { defer close(wrote); pw.CloseWithError(lay.write(pw)) }()
	defer func() { _ = pr.Close(); <-wrote }() // a build that stopped reading ends the writer
	var log bytes.Buffer
	res, err := api.ImageBuild(ctx, pr, client.ImageBuildOptions{Tags: []string{ref}, Remove: true, ForceRemove: true})
	if err == nil {
		err = readBuildOutput(res.Body, &log)
		_ = res.Body.Close()
	}
	if err != nil {
		return "", fmt.Errorf("cluster: build image %s: %w\n%s", ref, err, strings.TrimSpace(log.String()))
	}
	return ref, nil
}

// readBuildOutput copies the builder's output (a stream of JSON messages)
// to log and returns the error it reports, if any.
func readBuildOutput(r io.Reader, log io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the builder's output: %w", err)
		}
		if m.Error != nil {
			return m.Error
		}
		_, _ = io.WriteString(log, m.Stream)
	}
}

// redisImage returns the image [BuildRedisImage] builds for o.
func redisImage(o RedisImageOptions) (scratchImage, error) {
	im, err := redisBins(o.ServerBin, o.SentinelBin)
	if err != nil {
		return scratchImage{}, err
	}
	if o.ClockShim != "" {
		im.files[imageClockShim] = o.ClockShim
	}
	im.dockerfile = "LABEL lockpick.image=redis\n" +
		`ENTRYPOINT ["` + imageServerBin + `"]` + "\n"
	return im, nil
}

// redisBins returns an image holding the Redis binaries serverBin and
// sentinelBin (default: from PATH) at /usr/bin.
func redisBins(serverBin, sentinelBin string) (scratchImage, error) {
	var err error
	if serverBin == "" {
		if serverBin, err = exec.LookPath("redis-server"); err != nil {
			return scratchImage{}, fmt.Errorf("%w: redis-server (apt-get install redis-server)", cluster.ErrBinaryNotFound)
		}
	}
	if sentinelBin == "" {
		if sentinelBin, err = exec.LookPath("redis-sentinel"); err != nil {
			return scratchImage{}, fmt.Errorf("%w: redis-sentinel (apt-get install redis-sentinel)", cluster.ErrBinaryNotFound)
		}
	}
	server, err := filepath.EvalSymlinks(serverBin)
	if err != nil {
		return scratchImage{}, fmt.Errorf("%w: %v", cluster.ErrBinaryNotFound, err)
	}
	sentinel, err := filepath.EvalSymlinks(sentinelBin)
	if err != nil {
		return scratchImage{}, fmt.Errorf("%w: %v", cluster.ErrBinaryNotFound, err)
	}
	im := scratchImage{files: map[string]string{imageServerBin: server}, bins: []string{server}}
	if sentinel != server {
		im.files[imageSentinelBin] = sentinel
		im.bins = append(im.bins, sentinel)
	} else {
		// redis-server runs as a sentinel when called redis-sentinel.
		im.links = map[string]string{imageSentinelBin: path.Base(imageServerBin)}
	}
	return im, nil
}

// A scratchImage is a FROM scratch image made of host files.
type scratchImage struct {
	files map[string]string // image path -> host path
	// bins are host binaries (programs or shared libraries) whose shared
	// libraries (as ldd lists them) go into the image at the same paths.
	bins []string
	// libPath are folders ldd searches first (LD_LIBRARY_PATH) for the
	// libraries of bins: a JVM's libraries need its libjvm.so, which the
	// JVM loads before them.
	libPath []string
	links   map[string]string // image path -> symlink target
	// dirs are empty folders, writable by everyone (as /tmp is).
	dirs []string
	// dockerfile follows FROM, COPY of the files and LD_LIBRARY_PATH.
	dockerfile string
}

// An imageLayout is a [scratchImage] with its libraries found: what its
// build context holds.
type imageLayout struct {
	im         scratchImage
	files      map[string]string // image path -> host path, libraries included
	dockerfile string
}

// layout finds the libraries of im's binaries.
func (im scratchImage) layout() (imageLayout, error) {
	files := maps.Clone(im.files)
	if files == nil {
		files = map[string]string{}
	}
	libDirs := map[string]bool{}
	for _, bin := range im.bins {
		libs, err := sharedLibs(bin, im.libPath...)
		if err != nil {
			return imageLayout{}, err
		}
		for _, l := range libs {
			files[l] = l
			libDirs[path.Dir(l)] = true
		}
	}
	dockerfile := "FROM scratch\nCOPY rootfs/ /\n"
	if len(libDirs) > 0 {
		dockerfile += "ENV LD_LIBRARY_PATH=" + strings.Join(slices.Sorted(maps.Keys(libDirs)), ":") + "\n"
	}
	return imageLayout{im: im, files: files, dockerfile: dockerfile + im.dockerfile}, nil
}

// write writes the image's build context to w as a tar archive whose
// bytes depend only on the files' contents, so its hash names the image.
func (lay imageLayout) write(w io.Writer) error {
	tw := tar.NewWriter(w)
	add := func(hdr *tar.Header, body io.Reader) error {
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if body == nil {
			return nil
		}
		_, err := io.Copy(tw, body)
		return err
	}
	dockerfile := []byte(lay.dockerfile)
	if err := add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(dockerfile))}, bytes.NewReader(dockerfile)); err != nil {
		return err
	}
	seenDir := map[string]bool{}
	mkdirs := func(p string) error {
		for _, d := range parentDirs(p) {
			if !seenDir[d] {
				seenDir[d] = true
				if err := add(&tar.Header{Name: "rootfs" + d + "/", Mode: 0o755, Typeflag: tar.TypeDir}, nil); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, d := range slices.Sorted(slices.Values(lay.im.dirs)) {
		if err := mkdirs(d); err != nil {
			return err
		}
		seenDir[d] = true
		if err := add(&tar.Header{Name: "rootfs" + d + "/", Mode: 0o1777, Typeflag: tar.TypeDir}, nil); err != nil {
			return err
		}
	}
	for _, dst := range slices.Sorted(maps.Keys(lay.files)) {
		if err := mkdirs(dst); err != nil {
			return err
		}
		if err := addFile(add, dst, lay.files[dst]); err != nil {
			return err
		}
	}
	for _, dst := range slices.Sorted(maps.Keys(lay.im.links)) {
		if err := mkdirs(dst); err != nil {
			return err
		}
		hdr := &tar.Header{Name: "rootfs" + dst, Linkname: lay.im.links[dst], Mode: 0o777, Typeflag: tar.TypeSymlink}
		if err := add(hdr, nil); err != nil {
			return err
		}
	}
	return tw.Close()
}

// addFile adds the host file src (symlinks followed) to the archive at
// rootfs/dst.
func addFile(add func(*tar.Header, io.Reader) error, dst, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("cluster: image context: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cluster: image context: %w", err)
	}
	// A file that grew since Stat gets what Stat saw; one that shrank
	// fails the archive.
	hdr := &tar.Header{Name: "rootfs" + dst, Mode: 0o755, Typeflag: tar.TypeReg, Size: fi.Size()}
	return add(hdr, io.LimitReader(f, fi.Size()))
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

// sharedLibs returns the absolute paths ldd lists for bin (a program or a
// shared library), including the program interpreter named in the ELF
// header, looking in the folders libPath first.
func sharedLibs(bin string, libPath ...string) ([]string, error) {
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
		needed, _ := f.ImportedLibraries()
		f.Close()
		if len(libs) == 0 && len(needed) == 0 {
			return nil, nil // statically linked: ldd has nothing to say
		}
	}
	ldd, err := exec.LookPath("ldd")
	if err != nil {
		return nil, fmt.Errorf("%w: ldd (apt-get install libc-bin)", cluster.ErrBinaryNotFound)
	}
	cmd := exec.Command(ldd, bin)
	if len(libPath) > 0 {
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+strings.Join(libPath, ":"))
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("cluster: ldd %s: %w", bin, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
		// "/lib64/ld-linux-x86-64.so.2 (0x...)"; vdso has no path. A
		// path may go through "..": java's libjli.so is bin/../lib.
		line := strings.TrimSpace(sc.Text())
		if _, after, ok := strings.Cut(line, "=> "); ok {
			line = after
		}
		p, _, _ := strings.Cut(line, " ")
		if p = path.Clean(p); strings.HasPrefix(p, "/") && !slices.Contains(libs, p) {
			libs = append(libs, p)
		}
	}
	if strings.Contains(string(out), "not found") {
		return nil, fmt.Errorf("cluster: ldd %s: a library is missing:\n%s", bin, out)
	}
	return libs, nil
}

// An imageCache remembers the image built for each key (a binary's path,
// the Redis image's options), so a run of many trials hashes its files once.
type imageCache[K comparable] struct {
	mu    sync.Mutex
	byKey map[K]string
}

// build returns the image cached for key while the engine still has it,
// else builds make's image into repo and caches it.
func (c *imageCache[K]) build(ctx context.Context, api *client.Client, key K, repo string, make func() (scratchImage, error)) (string, error) {
	c.mu.Lock()
	ref, ok := c.byKey[key]
	c.mu.Unlock()
	if ok {
		if _, err := api.ImageInspect(ctx, ref); err == nil {
			return ref, nil
		}
	}
	im, err := make()
	if err != nil {
		return "", err
	}
	if ref, err = buildImage(ctx, api, repo, im); err != nil {
		return "", err
	}
	c.mu.Lock()
	if c.byKey == nil {
		c.byKey = map[K]string{}
	}
	c.byKey[key] = ref
	c.mu.Unlock()
	return ref, nil
}
