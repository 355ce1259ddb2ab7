// Package lazyfs is a FUSE filesystem that forgets what was not synced, as
// Jepsen's LazyFS does: a power loss for any program, in any language,
// without touching the program.
//
// [Mount] serves a directory (the backing directory) at a mountpoint. Lockpick
// mounts one over the data directory of each database node (Redis, etcd),
// kills the node with SIGKILL, calls [FS.PowerLoss], and restarts the node on
// the same mountpoint: the node sees only what it had made durable. The
// returned [Loss] says what was taken.
//
// # Durability rules
//
// File data and size changes (write, truncate, ftruncate) are kept in memory,
// per inode, as a list of written extents and a pending truncation point,
// until the file is fsynced or fdatasynced through any descriptor; then they
// are written to the backing file. Reads, sizes (stat) and page-ins of an
// mmap see the unsynced data over the backing file; a region truncated away
// and then written past reads as zeros. sync_file_range never reaches a
// FUSE filesystem, and neither do sync(2) and syncfs(2) (the kernel forwards
// them to virtiofs only): only fsync and fdatasync make data durable.
//
// fallocate goes to the backing file at once and is durable, since it only
// adds zeros (etcd preallocates its WAL files). Modes that punch holes or
// zero ranges are refused with EOPNOTSUPP.
//
// Namespace operations are applied to the backing directory at once and
// journaled until they are durable:
//   - a created file (open with O_CREAT, mknod) is durable once the file
//     itself is fsynced, as on ext4, or its directory is;
//   - unlink, rename, mkdir, rmdir, symlink and link are durable once the
//     directory they change is fsynced; a rename across directories needs
//     both.
//
// A power loss undoes the operations not durable, newest first. What an
// unlink or a rename over a file removes waits in a hidden directory of the
// backing directory, ".lazyfs-trash" (never listed, and emptied as the
// removal becomes durable), so that it can come back. Directories are found
// by inode number when undoing, so an operation in a directory renamed
// durably since is undone where the directory now is. An operation whose
// name was since taken by a durable one is dropped: the file it moved is lost,
// as it would be on a disk whose two directories were written at different
// times. Undoing a mkdir removes the directory with whatever was made durable
// inside it, which is unreachable without it.
//
// These are the minimum POSIX promises, and Redis 7.0 and etcd 3.4 do not
// keep to them: neither fsyncs the parent of a directory it creates
// (appendonlydir; the data directory and member/), and Redis renames its
// rewritten base file into appendonlydir from the directory above without
// fsyncing that one. A
// power loss then undoes the directory, or the rename, and everything in it
// is gone. ext4 and XFS keep them in practice, since any fsync commits their
// journal; [Options.Ordered] models that: any fsync or fdatasync makes every
// earlier namespace operation durable.
//
// Memory holds the unsynced data until it is synced, and the journal of
// operations not yet durable: nothing else grows with what was written.
//
// # Caches
//
// PowerLoss unmounts the filesystem and mounts it again at the same
// mountpoint, as a reboot does: no page, attribute or name cached by the
// kernel survives, and descriptors still open fail. The mount is
// aborted if it stays busy. While mounted, the kernel caches pages (no direct
// I/O, so MAP_SHARED mappings work, as bbolt needs) and never drops them on
// its own, since all writes go through it.
//
// # What it does not model
//
// Metadata other than names and sizes (mode, owner, times, xattrs) goes to
// the backing tree at once and is durable; mtime is the backing file's, so it
// moves when data is synced, not when it is written. A power loss loses all
// unsynced data of a file, never part of it, and never tears a write or
// reorders writes within a file, as a real disk may. Without
// [Options.Ordered], lazyfs may lose more than a real ext4 would; with it,
// less in one case: ext4's fdatasync of a file whose size did not change
// commits no journal. O_TMPFILE is refused (EOPNOTSUPP), since such a file could
// only be named by a link the loopback cannot make. The backing directory
// must be one filesystem.
//
// Mounting needs /dev/fuse and, as root, nothing else (mounts use allow_other,
// so a container bind-mounting the mountpoint can use it); otherwise
// fusermount3 and user_allow_other. [Available] says whether this host can.
// [Mounted] and [Sweep] clean up after a process that exits or dies.
package lazyfs
