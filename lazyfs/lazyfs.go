package lazyfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	// ErrNoFUSE means this host cannot mount a FUSE filesystem (no /dev/fuse, no fusermount, or mounting refused).
	ErrNoFUSE = errors.New("lazyfs: FUSE is not available")
	// ErrUnmounted is returned by PowerLoss on a filesystem that was unmounted.
	ErrUnmounted = errors.New("lazyfs: not mounted")
)

// fsType is the subtype of every lazy mount: /proc/mounts shows "fuse.lazyfs".
const fsType = "lazyfs"

// cacheTimeout is how long the kernel may trust attributes and names. All
// changes go through the kernel while a mount lives, and a power loss mounts
// anew, so this only saves round trips.
const cacheTimeout = time.Second

// Options configure a mount.
type Options struct {
	// Name is shown as the filesystem's source in /proc/mounts, e.g. "lockpick-n1".
	// default: "lazyfs".
	Name string
	// Ordered makes any fsync or fdatasync, of any file or directory, make
	// every earlier namespace operation durable, as the journal of ext4 or
	// XFS does in practice. Without it a mount keeps only the POSIX minimum
	// (see the package documentation), under which Redis 7.0 and etcd 3.4
	// lose all their data: they never fsync the parent of a directory they
	// create, nor the source directory of a rename across directories.
	// default: false.
	Ordered bool
	// IgnoreSync makes fsync and fdatasync succeed without making anything
	// durable, as a program run without fsync (etcd's --unsafe-no-fsync)
	// or a disk whose volatile cache acknowledges writes would: only
	// [FS.Sync] (the kernel writing back on its own) makes data durable.
	// default: false.
	IgnoreSync bool
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = fsType
	}
	return o
}

// An FS is a lazy filesystem mounted over a backing directory.
type FS struct {
	mountpoint string
	backing    string
	opts       Options

	mu  sync.Mutex // serializes PowerLoss and Unmount
	srv *fuse.Server
	st  *state
}

// Mount serves a lazy view of the directory backing at mountpoint (both must
// exist; mountpoint empty). Reads and writes pass through to backing, except
// that data not yet synced is kept in memory. It returns an error wrapping
// [ErrNoFUSE] if this host cannot mount FUSE filesystems.
func Mount(mountpoint, backing string, o Options) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	f := &FS{opts: o.withDefaults()}
	var err error
	if f.mountpoint, f.backing, err = checkDirs(mountpoint, backing); err != nil {
		return nil, err
	}
	if err := f.start(); err != nil {
		return nil, fmt.Errorf("mount %s: %w", mountpoint, err)
	}
	mounted.add(f)
	return f, nil
}

// checkDirs returns the absolute paths of mountpoint and backing, or an error
// if either is not a directory, mountpoint is not empty, or one holds the other.
func checkDirs(mountpoint, backing string) (string, string, error) {
	mp, err1 := filepath.Abs(mountpoint)
	bk, err2 := filepath.Abs(backing)
	if err := errors.Join(err1, err2); err != nil {
		return "", "", err
	}
	for _, d := range []string{mp, bk} {
		if st, err := os.Stat(d); err != nil {
			return "", "", err
		} else if !st.IsDir() {
			return "", "", fmt.Errorf("%s is not a directory", d)
		}
	}
	if !emptyDir(mp) {
		return "", "", fmt.Errorf("mountpoint %s is not empty", mp)
	}
	if within(mp, bk) || within(bk, mp) {
		return "", "", fmt.Errorf("mountpoint %s and backing %s overlap", mp, bk)
	}
	return mp, bk, nil
}

// within reports whether path p is dir or under it.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// start mounts a fresh state of the backing directory.
func (f *FS) start() error {
	st, err := newState(f.backing, f.opts.Ordered)
	if st != nil {
		st.ignoreSync = f.opts.IgnoreSync
	}
	if err != nil {
		return err
	}
	srv, err := fs.Mount(f.mountpoint, newRoot(st), mountOptions(f.opts.Name))
	if err != nil {
		os.RemoveAll(st.trash)
		return err
	}
	f.srv, f.st = srv, st
	return nil
}

// mountOptions returns how every lazy mount is made. The kernel caches pages
// as usual (no direct I/O, so shared mmaps work) and checks permissions. It
// never drops cached pages on its own, on an open or a change of mtime or
// size: all writes go through it, so its cache is right, while a page
// dropped during a write could be read again before the write arrives and
// keep the old bytes.
func mountOptions(name string) *fs.Options {
	timeout := cacheTimeout
	return &fs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:  os.Geteuid() == 0,
			FsName:      name,
			Name:        fsType,
			DirectMount: true,
			Options:     []string{"default_permissions"},

			ExplicitDataCacheControl: true,
		},
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
	}
}

// Mountpoint returns where f is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// PowerLoss drops everything not yet durable, as a host losing power does:
// unsynced file data and size changes, and namespace operations not made
// durable (see the package documentation). It unmounts the filesystem and
// mounts it again, so that no kernel cache keeps what was dropped; handles
// still open fail from then on. It returns [ErrUnmounted] after Unmount.
func (f *FS) PowerLoss() (Loss, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv == nil {
		return Loss{}, ErrUnmounted
	}
	paths := f.st.paths()
	if err := f.stop(); err != nil {
		return Loss{}, fmt.Errorf("power loss: %w", err)
	}
	loss := f.st.lose(paths)
	if err := f.start(); err != nil {
		mounted.remove(f)
		return loss, fmt.Errorf("power loss: mount again: %w", err)
	}
	return loss, nil
}

// Sync makes everything written so far durable at once, as the kernel's
// writeback of dirty pages and its journal commit eventually do. It
// returns [ErrUnmounted] after Unmount.
func (f *FS) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv == nil {
		return ErrUnmounted
	}
	return f.st.syncAll()
}

// Unmount stops serving and removes the mount (lazily if it is busy), after
// writing the unsynced data to the backing directory, as a clean shutdown
// does. It is idempotent and safe from any goroutine.
func (f *FS) Unmount() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv == nil {
		return nil
	}
	if err := f.stop(); err != nil {
		return fmt.Errorf("unmount %s: %w", f.mountpoint, err)
	}
	mounted.remove(f)
	return f.st.persist()
}

// stop removes the mount and waits for its server to end, at most a second:
// then the state refuses what the server still gets.
func (f *FS) stop() error {
	if err := unmount(f.mountpoint); err != nil {
		return err
	}
	srv, done := f.srv, make(chan struct{})
	go func() {
		srv.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	f.srv = nil
	return nil
}

// Mounted returns the lazyfs mounts this process made and has not unmounted,
// for a signal handler's cleanup.
func Mounted() []*FS { return mounted.list() }

// mounted is the set of mounts this process serves.
var mounted = &fsSet{m: map[*FS]struct{}{}}

type fsSet struct {
	mu sync.Mutex
	m  map[*FS]struct{}
}

func (s *fsSet) add(f *FS) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[f] = struct{}{}
}

func (s *fsSet) remove(f *FS) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, f)
}

func (s *fsSet) list() []*FS {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := make([]*FS, 0, len(s.m))
	for f := range s.m {
		l = append(l, f)
	}
	return l
}
