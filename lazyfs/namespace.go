package lazyfs

import (
	"context"
	"io"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The namespace operations are applied to the backing tree at once and
// journaled, so that a power loss can undo those whose directory was not
// fsynced since. What an unlink or a rename removes goes to the trash.

var (
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeMknoder   = (*node)(nil)
	_ fs.NodeSymlinker = (*node)(nil)
	_ fs.NodeLinker    = (*node)(nil)
	_ fs.NodeUnlinker  = (*node)(nil)
	_ fs.NodeRmdirer   = (*node)(nil)
	_ fs.NodeRenamer   = (*node)(nil)
)

// op returns an operation of the given kind on name in n, about inode ino.
func (n *node) op(kind, name string, ino uint64) *nsOp {
	return &nsOp{kind: kind, desc: kind + " " + n.rel(name), dir: n.dirID(), name: name, ino: ino}
}

// created journals the creation of ch as name in n, if it succeeded.
func (n *node) created(kind, name string, ch *fs.Inode, errno syscall.Errno) (*fs.Inode, syscall.Errno) {
	if errno != 0 {
		return nil, errno
	}
	if errno := n.st.record(n.op(kind, name, ch.StableAttr().Ino)); errno != 0 {
		return nil, errno
	}
	return ch, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.EPERM
	}
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	return n.created("mkdir", name, ch, errno)
}

func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.EPERM
	}
	ch, errno := n.LoopbackNode.Mknod(ctx, name, mode, dev, out)
	return n.created("mknod", name, ch, errno)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.EPERM
	}
	ch, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	return n.created("symlink", name, ch, errno)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.EPERM
	}
	var ch *fs.Inode
	errno := n.st.stat(func() uint64 { return ch.StableAttr().Ino }, func() (errno syscall.Errno) {
		ch, errno = n.LoopbackNode.Link(ctx, target, name, out)
		return errno
	}, sizeOf(&out.Attr))
	return n.created("link", name, ch, errno)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if n.hidden(name) {
		return syscall.EPERM
	}
	return n.st.unlink(n.op("unlink", name, 0), n.backingPath(name))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if n.hidden(name) {
		return syscall.EPERM
	}
	return n.st.rmdir(n.op("rmdir", name, 0), n.backingPath(name))
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if n.hidden(name) || to.hidden(newName) {
		return syscall.EPERM
	}
	op := n.op("rename", name, 0)
	op.desc += " → " + to.rel(newName)
	op.dir2, op.name2 = to.dirID(), newName
	return n.st.rename(op, n.backingPath(name), to.backingPath(newName), flags)
}

// record journals op, applied already.
func (s *state) record(op *nsOp) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return syscall.EIO
	}
	s.recordLocked(op)
	return 0
}

// lstatLocked stats the backing path p, refusing once the mount is dead.
func (s *state) lstatLocked(p string) (unix.Stat_t, syscall.Errno) {
	var st unix.Stat_t
	if s.dead {
		return st, syscall.EIO
	}
	if err := unix.Lstat(p, &st); err != nil {
		return st, fs.ToErrno(err)
	}
	return st, 0
}

// unlink moves the file at p to the trash and journals op.
func (s *state) unlink(op *nsOp, p string) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, errno := s.lstatLocked(p)
	if errno != 0 {
		return errno
	}
	if isDir(&st) {
		return syscall.EISDIR
	}
	name, trash := s.trashPathLocked()
	if err := unix.Rename(p, trash); err != nil {
		return fs.ToErrno(err)
	}
	op.ino, op.trash = st.Ino, name
	s.recordLocked(op)
	return 0
}

// rmdir removes the empty directory at p and journals op, with what it
// takes to make the directory again.
func (s *state) rmdir(op *nsOp, p string) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, errno := s.lstatLocked(p)
	if errno != 0 {
		return errno
	}
	if !isDir(&st) {
		return syscall.ENOTDIR
	}
	if err := unix.Rmdir(p); err != nil {
		return fs.ToErrno(err)
	}
	op.ino, op.mode, op.uid, op.gid = st.Ino, st.Mode, st.Uid, st.Gid
	s.recordLocked(op)
	return 0
}

// rename renames from to to in the backing tree and journals op. A file it
// replaces is first linked into the trash, so that the rename stays atomic.
func (s *state) rename(op *nsOp, from, to string, flags uint32) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return syscall.EIO
	}
	var src, dst unix.Stat_t
	if err := unix.Lstat(from, &src); err != nil {
		return fs.ToErrno(err)
	}
	dstErr := unix.Lstat(to, &dst)
	op.ino, op.isDir = src.Ino, isDir(&src)
	switch {
	case flags == unix.RENAME_EXCHANGE:
		op.swap, op.isDir = true, op.isDir || dstErr == nil && isDir(&dst)
	case flags == 0 && dstErr == nil && dst.Ino == src.Ino:
		return 0 // two links to one file: rename does nothing
	case flags == 0 && dstErr == nil:
		if errno := s.displaceLocked(op, &src, &dst, to); errno != 0 {
			return errno
		}
	case flags != 0 && flags != unix.RENAME_NOREPLACE:
		return syscall.EINVAL
	}
	if err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, uint(flags)); err != nil {
		s.replaceLocked(op, to)
		return fs.ToErrno(err)
	}
	s.recordLocked(op)
	return 0
}

// displaceLocked puts dst, at to, which a rename of src will replace, in the trash.
func (s *state) displaceLocked(op *nsOp, src, dst *unix.Stat_t, to string) syscall.Errno {
	name, trash := s.trashPathLocked()
	switch {
	case isDir(dst) && !isDir(src):
		return syscall.EISDIR
	case !isDir(dst) && isDir(src):
		return syscall.ENOTDIR
	case isDir(dst) && !emptyDir(to):
		return syscall.ENOTEMPTY
	case isDir(dst) || unix.Link(to, trash) != nil:
		if err := unix.Rename(to, trash); err != nil {
			return fs.ToErrno(err)
		}
	}
	op.trash = name
	return 0
}

// replaceLocked undoes displaceLocked after the rename failed.
func (s *state) replaceLocked(op *nsOp, to string) {
	if op.trash == "" {
		return
	}
	trash := s.trash + "/" + op.trash
	if unix.Renameat2(unix.AT_FDCWD, trash, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE) != nil {
		os.RemoveAll(trash) // a link: the file is still at to
	}
}

func isDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// emptyDir reports whether the directory at p has no entries.
func emptyDir(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return err == io.EOF
}
