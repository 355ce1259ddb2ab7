package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/lockpick/lockpick/lazyfs"
)

// A PowerCut is what a simulated power loss took from one node's disk:
// unsynced bytes by file and namespace operations undone (see [lazyfs.Loss]).
type PowerCut = lazyfs.Loss

// A Disk is the folder a node keeps its data in. A lazy disk is a lazy
// filesystem ([lazyfs]) mounted there, over a backing folder beside it
// (Path+".disk"): what the node has not synced is lost in a power loss.
// It is ordered, as ext4's journal is: any fsync also makes every earlier
// create, rename and unlink durable (Redis and etcd count on it).
// A plain disk is an ordinary folder, which cannot lose power.
type Disk struct {
	// Path is the folder the node writes its data in.
	Path string

	mu sync.Mutex
	fs *lazyfs.FS
}

// A DiskKind says what a node's data folder is.
type DiskKind int

const (
	// PlainDisk is an ordinary folder: it cannot lose power.
	PlainDisk DiskKind = iota
	// LazyDisk loses, in a power loss, what the node had not synced.
	LazyDisk
	// NoFsyncDisk is a lazy disk whose fsync makes nothing durable: only
	// [Disk.Sync] does (see [PersistNoFsync]).
	NoFsyncDisk
)

// LazyIf returns [LazyDisk] if lazy is true, else [PlainDisk].
func LazyIf(lazy bool) DiskKind {
	if lazy {
		return LazyDisk
	}
	return PlainDisk
}

// NewDisk makes the folder path, and mounts a lazy filesystem on it unless
// kind is [PlainDisk] (named for the node in /proc/mounts). It returns an
// error wrapping [ErrNoPowerLoss] (and [lazyfs.ErrNoFUSE]) when the host
// cannot mount one. A lazy disk must be closed.
func NewDisk(path, node string, kind DiskKind) (*Disk, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, err
	}
	d := &Disk{Path: path}
	if kind == PlainDisk {
		return d, nil
	}
	if err := lazyfs.Available(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoPowerLoss, err)
	}
	// Dead mounts of an earlier lockpick killed with SIGKILL (their server
	// gone): once a process, before the first mount.
	sweepOnce.Do(func() { _, _ = lazyfs.Sweep("/") })
	backing := path + ".disk"
	if err := os.MkdirAll(backing, 0o700); err != nil {
		return nil, err
	}
	fs, err := lazyfs.Mount(path, backing, lazyfs.Options{Name: "lockpick-" + node, Ordered: true, IgnoreSync: kind == NoFsyncDisk})
	if err != nil {
		return nil, fmt.Errorf("%w: mount %s: %w", ErrNoPowerLoss, path, err)
	}
	d.fs = fs
	disks.add(d)
	return d, nil
}

// Lazy reports whether the disk can lose power.
func (d *Disk) Lazy() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fs != nil
}

// PowerLoss drops everything the node had not synced; call it while the
// node is down. A plain disk returns an error wrapping [ErrNoPowerLoss].
func (d *Disk) PowerLoss() (PowerCut, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fs == nil {
		return PowerCut{}, fmt.Errorf("%w: %s is not on a lazy filesystem", ErrNoPowerLoss, d.Path)
	}
	return d.fs.PowerLoss()
}

// Sync makes everything the node wrote durable now, as the kernel writes
// dirty pages back on its own; a plain disk has nothing to do.
func (d *Disk) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fs == nil {
		return nil
	}
	return d.fs.Sync()
}

// Wipe removes everything in the folder, durably (a node whose disk was
// replaced): a later power loss does not bring it back.
func (d *Disk) Wipe() error {
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(d.Path, e.Name())); err != nil {
			return err
		}
	}
	return syncDir(d.Path)
}

// Close unmounts a lazy disk, leaving its backing folder. It is idempotent.
func (d *Disk) Close() error {
	d.mu.Lock()
	fs := d.fs
	d.fs = nil
	d.mu.Unlock()
	if fs == nil {
		return nil
	}
	disks.remove(d)
	return fs.Unmount()
}

// Remove unmounts the disk and removes its folder and backing folder, with
// all the node's data (a closed cluster's: etcd preallocates 64 MB of WAL
// a member).
func (d *Disk) Remove() error {
	return errors.Join(d.Close(), os.RemoveAll(d.Path), os.RemoveAll(d.Path+".disk"))
}

// syncDir fsyncs the folder at path, making its entries durable.
func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

var sweepOnce sync.Once

// disks tracks mounted lazy disks, so [KillAll] unmounts them once the
// nodes using them are killed.
var disks = &diskSet{disks: map[*Disk]struct{}{}}

type diskSet struct {
	mu    sync.Mutex
	disks map[*Disk]struct{}
}

func (s *diskSet) add(d *Disk) {
	s.mu.Lock()
	s.disks[d] = struct{}{}
	s.mu.Unlock()
}

func (s *diskSet) remove(d *Disk) {
	s.mu.Lock()
	delete(s.disks, d)
	s.mu.Unlock()
}

func (s *diskSet) closeAll() {
	s.mu.Lock()
	ds := make([]*Disk, 0, len(s.disks))
	for d := range s.disks {
		ds = append(ds, d)
	}
	s.mu.Unlock()
	for _, d := range ds {
		_ = d.Close()
	}
}
