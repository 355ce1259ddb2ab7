package lazyfs

import (
	"context"
	"path"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// A node is a file or directory of a lazy mount: a loopback node whose
// writes, truncations, syncs and namespace operations go through the mount's
// state. Operations it does not override go straight to the backing tree.
type node struct {
	*fs.LoopbackNode
	st *state
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeStatxer        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeTmpfiler       = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
)

// newRoot returns the root node of a lazy mount of st's backing directory.
func newRoot(st *state) *node {
	data := &fs.LoopbackRoot{Path: st.backing, Dev: st.rootDev}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: data}, st: st}
	data.RootNode = root
	return root
}

// WrapChild makes every node of the tree a lazy one.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), st: n.st}
}

// backingPath returns the backing path of name in n (of n itself for "").
func (n *node) backingPath(name string) string {
	return filepath.Join(n.RootData.Path, n.Path(nil), name)
}

// rel returns the path of name in n relative to the mountpoint, for messages.
func (n *node) rel(name string) string { return path.Join(n.Path(nil), name) }

// hidden reports whether name in n is the trash, which users cannot see.
func (n *node) hidden(name string) bool { return n.IsRoot() && name == trashName }

// dirID returns the backing inode number of n, a directory.
func (n *node) dirID() uint64 {
	if n.IsRoot() {
		return n.st.rootIno
	}
	return n.StableAttr().Ino
}

// sizeOf returns a func setting the size in a to the one users see.
func sizeOf(a *fuse.Attr) func(uint64) {
	return func(size uint64) { a.Size, a.Blocks = size, (size+511)/512 }
}

// ino returns the node's inode number, for [state.stat].
func (n *node) ino() uint64 { return n.StableAttr().Ino }

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.ENOENT
	}
	var ch *fs.Inode
	errno := n.st.stat(func() uint64 { return ch.StableAttr().Ino }, func() (errno syscall.Errno) {
		ch, errno = n.LoopbackNode.Lookup(ctx, name, out)
		return errno
	}, sizeOf(&out.Attr))
	return ch, errno
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return n.st.stat(n.ino, func() syscall.Errno { return n.LoopbackNode.Getattr(ctx, f, out) }, sizeOf(&out.Attr))
}

func (n *node) Statx(ctx context.Context, f fs.FileHandle, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	return n.st.stat(n.ino, func() syscall.Errno { return n.LoopbackNode.Statx(ctx, f, flags, mask, out) },
		func(size uint64) { out.Size, out.Blocks = size, (size+511)/512 })
}

// Setattr keeps a size change in memory and applies the rest (mode, owner,
// times) to the backing file at once.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	h, _ := f.(*handle)
	if size, ok := in.GetSize(); ok {
		fd := -1
		if h != nil {
			fd = h.fd
		}
		if errno := n.st.truncate(n.StableAttr().Ino, fd, n.backingPath(""), n.EmbeddedInode(), int64(size)); errno != 0 {
			return errno
		}
	}
	rest := *in
	rest.Valid &^= fuse.FATTR_SIZE
	return n.st.stat(n.ino, func() syscall.Errno {
		if h != nil {
			return h.lf.Setattr(ctx, &rest, out)
		}
		return n.LoopbackNode.Setattr(ctx, nil, &rest, out)
	}, sizeOf(&out.Attr))
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, backingFlags(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	h := newHandle(n.st, n.EmbeddedInode(), fh)
	if flags&syscall.O_TRUNC != 0 {
		// The kernel sends a SETATTR instead, unless a file system asks for atomic O_TRUNC.
		if errno := n.st.truncate(h.ino, h.fd, "", h.node, 0); errno != 0 {
			h.Release(ctx)
			return nil, 0, errno
		}
	}
	return h, fuseFlags | fuse.FOPEN_KEEP_CACHE, 0
}

// Create creates the file in the backing directory at once, and journals
// the creation until the file or its directory is fsynced.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.hidden(name) {
		return nil, nil, 0, syscall.EPERM
	}
	_, existed := inoAt(n.backingPath(name))
	ch, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, backingFlags(flags), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	h := newHandle(n.st, ch, fh)
	switch {
	case !existed:
		errno = n.st.record(n.op("create", name, h.ino))
	case flags&syscall.O_TRUNC != 0:
		errno = n.st.truncate(h.ino, h.fd, "", ch, 0)
	}
	if errno != 0 {
		h.Release(ctx)
		return nil, nil, 0, errno
	}
	errno = n.st.stat(func() uint64 { return h.ino }, func() syscall.Errno {
		var st syscall.Stat_t
		if err := syscall.Fstat(h.fd, &st); err != nil {
			return fs.ToErrno(err)
		}
		out.Attr.FromStat(&st)
		return 0
	}, sizeOf(&out.Attr))
	if errno != 0 {
		h.Release(ctx)
		return nil, nil, 0, errno
	}
	return ch, h, fuseFlags | fuse.FOPEN_KEEP_CACHE, 0
}

// Fsync makes a file's data and creation durable, or a directory's entries.
// The kernel sends it for fsync and fdatasync, and for an fsync of a
// directory (FSYNCDIR, which the directory handle leaves to the node).
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.IsDir() {
		return n.st.syncDir(n.dirID())
	}
	return n.st.syncFile(n.StableAttr().Ino)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	d := &dirHandle{ds: fh.(fs.FileReaddirenter)}
	if n.IsRoot() {
		d.hide = trashName
	}
	return d, fuseFlags, 0
}

// Tmpfile refuses O_TMPFILE: such a file could only be named through a link
// the loopback cannot make. The kernel remembers ENOSYS and answers EOPNOTSUPP.
func (n *node) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.ENOSYS
}

// CopyFileRange refuses, so that the kernel copies by reads and writes, which come here.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut, size, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}
