package lazyfs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// trashName is the hidden directory, at the top of the backing directory,
// that holds what unlinks and renames displaced until that is durable.
const trashName = ".lazyfs-trash"

// A state is what one mount keeps in memory: the unsynced data of each file
// and the namespace operations not yet durable. One mutex guards it all;
// reads of file data share it, even of clean files, so that none sees a sync
// half done.
type state struct {
	backing    string // absolute path of the backing directory
	trash      string // absolute path of the trash directory
	rootDev    uint64 // device and inode number of the backing directory
	rootIno    uint64
	ordered    bool // any fsync makes every namespace operation durable
	ignoreSync bool // fsync makes nothing durable

	mu       sync.RWMutex
	dead     bool                  // the mount is gone; refuse what still comes in
	files    map[uint64]*dirtyFile // by inode number
	journal  []*nsOp               // oldest first
	trashSeq int
}

// A dirtyFile is a file with unsynced changes.
type dirtyFile struct {
	pending
	fd   int       // the backing file, read-write, owned
	node *fs.Inode // for its path at the time of a loss
	path string    // its path when it became dirty, if node has none by then
}

// newState empties the trash of backing (left by a process that died) and
// returns the state of a new mount over it (see [Options.Ordered]).
func newState(backing string, ordered bool) (*state, error) {
	var st unix.Stat_t
	if err := unix.Stat(backing, &st); err != nil {
		return nil, err
	}
	trash := filepath.Join(backing, trashName)
	if err := os.RemoveAll(trash); err != nil {
		return nil, err
	}
	if err := os.Mkdir(trash, 0o700); err != nil {
		return nil, err
	}
	return &state{backing: backing, trash: trash, rootDev: st.Dev, rootIno: st.Ino, ordered: ordered, files: map[uint64]*dirtyFile{}}, nil
}

// dirtyLocked returns the dirty record of ino, making one from the backing file
// open at fd (or at path if fd < 0) if the file was clean.
func (s *state) dirtyLocked(ino uint64, fd int, path string, node *fs.Inode) (*dirtyFile, error) {
	if d := s.files[ino]; d != nil {
		return d, nil
	}
	if fd >= 0 {
		path = fmt.Sprintf("/proc/self/fd/%d", fd) // works for unlinked files too
	}
	own, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(own, &st); err != nil {
		unix.Close(own)
		return nil, err
	}
	d := &dirtyFile{pending: newPending(st.Size), fd: own, node: node, path: node.Path(nil)}
	s.files[ino] = d
	return d, nil
}

// write keeps b, written at off to the file ino open at fd, in memory.
func (s *state) write(ino uint64, fd int, node *fs.Inode, b []byte, off int64) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return syscall.EIO
	}
	d, err := s.dirtyLocked(ino, fd, "", node)
	if err != nil {
		return fs.ToErrno(err)
	}
	d.write(off, b)
	return 0
}

// read reads the file ino, open at fd, as its users see it.
func (s *state) read(ino uint64, fd int, dst []byte, off int64) (int, syscall.Errno) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.files[ino]
	if d == nil {
		n, err := preadFull(fd, dst, off)
		return n, fs.ToErrno(err)
	}
	n, err := d.read(dst, off, func(b []byte, off int64) (int, error) { return preadFull(d.fd, b, off) })
	return n, fs.ToErrno(err)
}

// truncate sets the size of the file ino, open at fd or else found at path, in memory.
func (s *state) truncate(ino uint64, fd int, path string, node *fs.Inode, size int64) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return syscall.EIO
	}
	d, err := s.dirtyLocked(ino, fd, path, node)
	if err != nil {
		return fs.ToErrno(err)
	}
	d.truncate(size)
	return 0
}

// allocate runs alloc, which preallocates in the backing file ino, and grows
// the size users see to end unless the size is kept.
func (s *state) allocate(ino uint64, end int64, keepSize bool, alloc func() syscall.Errno) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return syscall.EIO
	}
	if errno := alloc(); errno != 0 {
		return errno
	}
	if d := s.files[ino]; d != nil && !keepSize {
		d.extend(end)
	}
	return 0
}

// size returns the size users see of the file ino, if it has unsynced changes.
// stat runs stat, which reads the backing file's attributes, then gives set
// the size users see if the file has unsynced changes, both under one lock:
// an fsync's flush between the two would report the backing file's size
// from before it, smaller than the kernel's, which the kernel takes (an
// fsync does not change its attribute version) and O_APPEND then writes at.
func (s *state) stat(ino func() uint64, stat func() syscall.Errno, set func(size uint64)) syscall.Errno {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if errno := stat(); errno != 0 {
		return errno
	}
	if d := s.files[ino()]; d != nil {
		set(uint64(d.size))
	}
	return 0
}

// syncFile makes the file ino durable: its data and size, and its creation.
func (s *state) syncFile(ino uint64) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return syscall.EIO
	}
	if s.ignoreSync {
		return 0
	}
	if err := s.flushLocked(ino); err != nil {
		return fs.ToErrno(err)
	}
	s.syncedLocked(func(op *nsOp) { op.fileSynced(ino) })
	return 0
}

// flushLocked writes the unsynced data of file ino, if any, to the backing
// file, which then holds all of it.
func (s *state) flushLocked(ino uint64) error {
	d := s.files[ino]
	if d == nil {
		return nil
	}
	if err := d.flush(d.fd); err != nil {
		return fmt.Errorf("sync %s: %w", d.path, err)
	}
	unix.Close(d.fd)
	delete(s.files, ino)
	return nil
}

// syncDir makes the namespace operations on directory dir durable.
func (s *state) syncDir(dir uint64) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return syscall.EIO
	}
	if s.ignoreSync {
		return 0
	}
	s.syncedLocked(func(op *nsOp) { op.dirSynced(dir) })
	return 0
}

// syncAll makes every file's data and every namespace operation durable.
func (s *state) syncAll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return ErrUnmounted
	}
	for ino := range s.files {
		if err := s.flushLocked(ino); err != nil {
			return err
		}
	}
	s.settleLocked(func(op *nsOp) { op.waits = nil })
	return nil
}

// paths returns where each dirty file is now, relative to the mountpoint.
func (s *state) paths() map[uint64]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := make(map[uint64]string, len(s.files))
	for ino, d := range s.files {
		paths[ino] = d.path
		if _, parent := d.node.Parent(); parent != nil {
			paths[ino] = d.node.Path(nil)
		}
	}
	return paths
}

// lose drops what is not durable, as a power loss does, and returns what it
// took; paths names the dirty files. The mount must be gone.
func (s *state) lose(paths map[uint64]string) Loss {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = true
	loss := Loss{Bytes: map[string]int64{}}
	for ino, d := range s.files {
		var st unix.Stat_t
		if unix.Fstat(d.fd, &st) == nil && st.Nlink > 0 {
			p, ok := paths[ino]
			if !ok {
				p = d.path
			}
			if n := lostBytes(&d.pending, st.Size); n > 0 {
				loss.Bytes[p] += n
			}
		}
		unix.Close(d.fd)
	}
	s.files = nil
	loss.Undone = s.undoLocked()
	s.journal = nil
	os.RemoveAll(s.trash)
	return loss
}

// lostBytes returns what dropping p loses from a file whose durable size is
// durable: the bytes written, or if none the bytes a size change would add or cut.
func lostBytes(p *pending, durable int64) int64 {
	if n := p.written(); n > 0 {
		return n
	}
	if p.size > durable {
		return p.size - durable
	}
	return durable - p.size
}

// persist makes everything durable, as a clean shutdown does, and removes
// the trash. The mount must be gone.
func (s *state) persist() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = true
	var first error
	for _, d := range s.files {
		if err := d.flush(d.fd); err != nil && first == nil {
			first = fmt.Errorf("flush %s: %w", d.path, err)
		}
		unix.Close(d.fd)
	}
	s.files = nil
	s.journal = nil
	if err := os.RemoveAll(s.trash); err != nil && first == nil {
		first = err
	}
	return first
}
