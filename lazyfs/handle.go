package lazyfs

import (
	"bytes"
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// A handle is an open file. Writes stay in the mount's state until the file
// is synced; reads see them over the backing file. It wraps a loopback file
// rather than embedding it, so that no kernel passthrough is offered and every
// read and write comes here.
type handle struct {
	st   *state
	node *fs.Inode
	ino  uint64
	lf   *fs.LoopbackFile
	fd   int // lf's descriptor, valid until Release
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileWritever  = (*handle)(nil)
	_ fs.FileAllocater = (*handle)(nil)
	_ fs.FileGetattrer = (*handle)(nil)
	_ fs.FileStatxer   = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
)

// newHandle wraps fh, a loopback file opened on node.
func newHandle(st *state, node *fs.Inode, fh fs.FileHandle) *handle {
	lf := fh.(*fs.LoopbackFile)
	fd, _ := lf.PassthroughFd()
	return &handle{st: st, node: node, ino: node.StableAttr().Ino, lf: lf, fd: fd}
}

// backingFlags returns the flags to open a backing file with: read-write
// even if the caller only writes (the unsynced data is laid over what the
// backing file has), and no truncation, which goes through the state.
func backingFlags(flags uint32) uint32 {
	flags &^= syscall.O_TRUNC | syscall.O_DIRECT
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags
}

func (h *handle) Read(ctx context.Context, dst []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, errno := h.st.read(h.ino, h.fd, dst, off)
	return fuse.ReadResultData(dst[:n]), errno
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := h.st.write(h.ino, h.fd, h.node, data, off); errno != 0 {
		return 0, errno
	}
	return uint32(len(data)), 0
}

func (h *handle) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	return h.Write(ctx, bytes.Join(data, nil), off)
}

// Allocate preallocates in the backing file at once, as durable: it only
// adds zeros. Modes that punch holes or zero ranges are not supported.
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if mode&^unix.FALLOC_FL_KEEP_SIZE != 0 {
		return syscall.EOPNOTSUPP
	}
	keep := mode&unix.FALLOC_FL_KEEP_SIZE != 0
	return h.st.allocate(h.ino, int64(off+size), keep, func() syscall.Errno {
		return h.lf.Allocate(ctx, off, size, mode)
	})
}

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}

func (h *handle) Statx(ctx context.Context, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	return h.lf.Statx(ctx, flags, mask, out)
}

func (h *handle) Flush(ctx context.Context) syscall.Errno { return h.lf.Flush(ctx) }

func (h *handle) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }

// A dirHandle is an open directory: it hides the trash, and leaves fsync to
// the node (the loopback's would fsync the backing directory and nothing more).
type dirHandle struct {
	ds   fs.FileReaddirenter
	hide string // a name not to list, or ""
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
)

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	for {
		e, errno := d.ds.Readdirent(ctx)
		if errno != 0 || e == nil || e.Name != d.hide || d.hide == "" {
			return e, errno
		}
	}
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if s, ok := d.ds.(fs.FileSeekdirer); ok {
		return s.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	if r, ok := d.ds.(fs.FileReleasedirer); ok {
		r.Releasedir(ctx, flags)
	}
}
