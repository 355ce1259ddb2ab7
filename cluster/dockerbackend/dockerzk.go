package dockerbackend

import (
	"archive/zip"
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockpick/lockpick/cluster"
)

// ZooKeeperImageRepo is the repository of the images
// [BuildZooKeeperImage] builds; the tag is a hash of the image's content.
const ZooKeeperImageRepo = "lockpick-zookeeper"

// builtZooKeeper remembers the image built for each java, so a run of
// many trials reads and hashes the JVM (near 200 MB) once.
var builtZooKeeper = &imageCache[string]{}

// jvmSkipped are the files of a JVM's lib folder a headless server does
// not need: the desktop's libraries (AWT, fonts, sound, images, the
// accessibility bridge: they also link X11 and more), smart cards, what
// javac and debuggers read, and the class data archive of heaps over
// 32 GB (members run with 192 MB).
var jvmSkipped = []string{
	"libawt.so", "libawt_headless.so", "libawt_xawt.so", "libfontmanager.so", "libjawt.so",
	"libjavajpeg.so", "liblcms.so", "libmlib_image.so", "libsplashscreen.so", "libjsound.so",
	"libatk-wrapper.so", "libj2pcsc.so", "libsaproc.so",
	"ct.sym", "src.zip", "classlist", "jexec", "jar.binfmt", "psfont.properties.ja", "psfontj2d.properties",
	"classes_nocoops.jsa",
}

// javaBin returns the java launcher from PATH with its symbolic links
// resolved (/usr/lib/jvm/<jvm>/bin/java), or [cluster.ErrBinaryNotFound].
func javaBin() (string, error) {
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java (apt-get install openjdk-17-jre-headless)", cluster.ErrBinaryNotFound)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: %v", cluster.ErrBinaryNotFound, err)
	}
	return real, nil
}

// BuildZooKeeperImage builds a FROM scratch image holding the host's JVM
// (java, default: from PATH, resolved: its bin/java, conf/, lib/ but for
// [jvmSkipped] and release) with the libraries ldd lists for java and the
// JVM's own libraries, and the jars of [cluster.ZooKeeperJars] with those
// their manifests' Class-Path names, all at their host paths, and returns
// its reference, ZooKeeperImageRepo:<hash of the build context>; an image
// with that tag already in the engine is reused. It returns
// [cluster.ErrBinaryNotFound] when java, a jar or ldd is missing and an
// error wrapping [ErrNoDocker] when no engine answers.
func BuildZooKeeperImage(ctx context.Context, java string) (string, error) {
	var err error
	if java == "" {
		if java, err = javaBin(); err != nil {
			return "", err
		}
	}
	api, err := engine(ctx)
	if err != nil {
		return "", err
	}
	return builtZooKeeper.build(ctx, api, java, ZooKeeperImageRepo, func() (scratchImage, error) { return zooKeeperImage(java) })
}

// zooKeeperImage returns the image [BuildZooKeeperImage] builds for java.
func zooKeeperImage(java string) (scratchImage, error) {
	home := filepath.Dir(filepath.Dir(java))
	if _, err := os.Stat(filepath.Join(home, "lib", "modules")); err != nil {
		return scratchImage{}, fmt.Errorf("%w: %s is not a JVM's launcher (no lib/modules beside it)", cluster.ErrBinaryNotFound, java)
	}
	im := scratchImage{files: map[string]string{java: java}, bins: []string{java},
		libPath:    []string{filepath.Join(home, "lib"), filepath.Join(home, "lib", "server")},
		dirs:       []string{"/tmp"}, // hsperfdata, java.io.tmpdir
		dockerfile: "LABEL lockpick.image=zookeeper\n" + `ENTRYPOINT ["` + java + `"]` + "\n"}
	if release := filepath.Join(home, "release"); fileExists(release) {
		im.files[release] = release
	}
	for _, dir := range []string{"conf", "lib"} {
		err := filepath.WalkDir(filepath.Join(home, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || slices.Contains(jvmSkipped, d.Name()) {
				return err
			}
			// Debian links conf/ and some of lib/ to /etc: the image gets
			// the file. A link to a folder or nowhere is left out.
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				return nil
			}
			im.files[p] = p
			if strings.HasSuffix(p, ".so") {
				im.bins = append(im.bins, p)
			}
			return nil
		})
		if err != nil {
			return scratchImage{}, fmt.Errorf("cluster: ZooKeeper image: %w", err)
		}
	}
	jars, err := classPath(cluster.ZooKeeperJars)
	if err != nil {
		return scratchImage{}, err
	}
	for _, j := range jars {
		im.files[j] = j
	}
	return im, nil
}

// classPath returns the jars of a class path and, recursively, those their
// manifests' Class-Path names (as the JVM loads them), without the missing
// ones the manifests name, which the JVM ignores. A jar of jars that is
// missing is an error wrapping [cluster.ErrBinaryNotFound].
func classPath(jars []string) ([]string, error) {
	for _, j := range jars {
		if !fileExists(j) {
			return nil, fmt.Errorf("%w: %s (apt-get install zookeeper)", cluster.ErrBinaryNotFound, j)
		}
	}
	var out []string
	todo := slices.Clone(jars)
	for len(todo) > 0 && len(out) < 1000 { // bounded: a manifest could name thousands
		j := todo[0]
		todo = todo[1:]
		if slices.Contains(out, j) || !fileExists(j) {
			continue
		}
		out = append(out, j)
		for _, e := range manifestClassPath(j) {
			if !filepath.IsAbs(e) {
				e = filepath.Join(filepath.Dir(j), e)
			}
			todo = append(todo, filepath.Clean(e))
		}
	}
	return out, nil
}

// manifestClassPath returns the entries of jar's manifest's Class-Path, or
// none when it has none or cannot be read.
func manifestClassPath(jar string) []string {
	r, err := zip.OpenReader(jar)
	if err != nil {
		return nil
	}
	defer r.Close()
	f, err := r.Open("META-INF/MANIFEST.MF")
	if err != nil {
		return nil
	}
	defer f.Close()
	// A manifest's long lines go on in lines that begin with a space.
	var value string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case in && strings.HasPrefix(line, " "):
			value += line[1:]
		case in:
			return strings.Fields(value)
		default:
			if v, ok := strings.CutPrefix(line, "Class-Path:"); ok {
				value, in = strings.TrimPrefix(v, " "), true
			}
		}
	}
	return strings.Fields(value)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// ZooKeeperPlace makes member name a container of the image
// [BuildZooKeeperImage] builds from the host's JVM and ZooKeeper's jars
// (whatever Image says, which is Redis's), on the host's network, with its
// folder Dir/name bind-mounted at the same path; what the JVM prints (its
// log) is copied to Dir/name.log as it comes. Each start of the member is
// a new container, removed when the member starts again or the backend
// closes.
func (b *Backend) ZooKeeperPlace(ctx context.Context, name string) (cluster.MemberPlace, error) {
	java, err := javaBin()
	if err != nil {
		return cluster.MemberPlace{}, err
	}
	mi := memberImage{entrypoint: java, follow: true}
	return b.memberPlace(ctx, name, &b.zkImage, func(ctx context.Context) (string, error) { return BuildZooKeeperImage(ctx, java) }, mi)
}
