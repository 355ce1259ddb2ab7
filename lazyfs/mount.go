package lazyfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// Available returns nil if a lazy filesystem can be mounted here, or an error
// wrapping [ErrNoFUSE] saying why. The first call mounts a probe once; the
// answer is cached.
func Available() error { return available() }

var available = sync.OnceValue(probe)

// probe checks for /dev/fuse and fusermount, then mounts an empty filesystem
// as lazy mounts are made, and unmounts it.
func probe() error {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: open /dev/fuse: %v", ErrNoFUSE, err)
	}
	unix.Close(fd)
	if os.Geteuid() != 0 {
		if _, err := fusermount(); err != nil {
			return fmt.Errorf("%w: not root, and %v", ErrNoFUSE, err)
		}
	}
	dir, err := os.MkdirTemp("", "lazyfs-probe-")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoFUSE, err)
	}
	defer os.Remove(dir)
	srv, err := fs.Mount(dir, &fs.Inode{}, mountOptions(fsType))
	if err != nil {
		return fmt.Errorf("%w: mounting refused: %v", ErrNoFUSE, err)
	}
	if err := unmount(dir); err != nil {
		return fmt.Errorf("%w: unmounting refused: %v", ErrNoFUSE, err)
	}
	srv.Wait()
	return nil
}

// fusermount returns the path of fusermount3, or else fusermount.
func fusermount() (string, error) {
	if p, err := exec.LookPath("fusermount3"); err == nil {
		return p, nil
	}
	return exec.LookPath("fusermount")
}

// unmount removes the mount at mp. If it stays busy for a while, it aborts
// the FUSE connection (users of the mount then get ENOTCONN) and detaches it.
func unmount(mp string) error {
	err := unix.Unmount(mp, 0)
	for delay := time.Millisecond; err == unix.EBUSY && delay <= 64*time.Millisecond; delay *= 2 {
		time.Sleep(delay) // the kernel may still be closing the files of killed processes
		err = unix.Unmount(mp, 0)
	}
	switch err {
	case nil, unix.EINVAL: // EINVAL: unmounted already, by someone else
		return nil
	case unix.EBUSY:
		unix.Unmount(mp, unix.MNT_FORCE) // aborts the connection; still fails as busy
		return unix.Unmount(mp, unix.MNT_DETACH)
	case unix.EPERM:
		return fusermountU(mp)
	}
	return err
}

// fusermountU unmounts mp as an unprivileged user, lazily if it is busy.
func fusermountU(mp string) error {
	bin, err := fusermount()
	if err != nil {
		return err
	}
	if exec.Command(bin, "-u", mp).Run() == nil {
		return nil
	}
	if out, err := exec.Command(bin, "-u", "-z", mp).CombinedOutput(); err != nil {
		return fmt.Errorf("%s -u -z %s: %v: %s", bin, mp, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Sweep unmounts the lazyfs mounts under dir left by a process that died
// (found in /proc/mounts by their type; their server no longer answers),
// returning how many. Mounts served by a live process are left alone.
func Sweep(dir string) (int, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return 0, err
	}
	points, err := lazyMounts()
	if err != nil {
		return 0, err
	}
	ours := map[string]bool{}
	for _, f := range Mounted() {
		ours[f.Mountpoint()] = true
	}
	n := 0
	var errs []error
	for _, p := range points {
		if !within(dir, p) || ours[p] || !orphaned(p) {
			continue
		}
		if err := detach(p); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// lazyMounts returns the mountpoints of the lazyfs mounts in /proc/mounts.
func lazyMounts() ([]string, error) {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "fuse."+fsType {
			points = append(points, unescapeMount(fields[1]))
		}
	}
	return points, sc.Err()
}

// unescapeMount decodes the octal escapes (\040 for a space) of /proc/mounts.
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// orphaned reports whether the server of the mount at p is gone: the kernel
// then answers ENOTCONN to statfs, which it never answers from a cache. A
// server that does not answer within a second is taken for alive (stopped, or busy).
func orphaned(p string) bool {
	res := make(chan error, 1)
	go func() {
		var st unix.Statfs_t
		res <- unix.Statfs(p, &st)
	}()
	select {
	case err := <-res:
		return err == unix.ENOTCONN
	case <-time.After(time.Second):
		return false
	}
}

// detach removes the mount at p, lazily.
func detach(p string) error {
	err := unix.Unmount(p, unix.MNT_DETACH)
	if err == unix.EPERM {
		return fusermountU(p)
	}
	return err
}
