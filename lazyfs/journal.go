package lazyfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// An nsOp is a namespace operation applied to the backing directory but not
// yet durable, with what it takes to undo it. Directories are named by inode
// number, so an operation can be undone after its directory was renamed.
type nsOp struct {
	kind   string   // "create", "mknod", "symlink", "link", "mkdir", "rmdir", "unlink" or "rename"
	desc   string   // e.g. "rename a → b", for [Loss.Undone]
	dir    uint64   // the directory changed
	name   string   // the name changed in dir
	dir2   uint64   // for a rename, the directory moved to (maybe dir)
	name2  string   // for a rename, the name moved to
	ino    uint64   // the inode created, linked, removed or moved
	trash  string   // name in the trash of what the operation displaced, if anything
	waits  []uint64 // directories whose fsync this operation still waits for
	mode   uint32   // for rmdir: the directory's mode and owner
	uid    uint32
	gid    uint32
	swap   bool // a rename that exchanged two names
	isDir  bool // what was moved is a directory
	synced bool // the created file itself was fsynced
}

// dirSynced notes that directory dir was fsynced.
func (op *nsOp) dirSynced(dir uint64) {
	op.waits = slices.DeleteFunc(op.waits, func(d uint64) bool { return d == dir })
}

// fileSynced notes that the file ino was fsynced, which makes its creation durable.
func (op *nsOp) fileSynced(ino uint64) {
	if (op.kind == "create" || op.kind == "mknod") && op.ino == ino {
		op.synced = true
	}
}

func (op *nsOp) durable() bool { return op.synced || len(op.waits) == 0 }

// recordLocked appends op to the journal, to wait for the fsync of its directories.
func (s *state) recordLocked(op *nsOp) {
	op.waits = []uint64{op.dir}
	if op.kind == "rename" && op.dir2 != op.dir {
		op.waits = append(op.waits, op.dir2)
	}
	s.journal = append(s.journal, op)
}

// settleLocked applies note to every journaled operation, then forgets those
// now durable and empties their trash.
func (s *state) settleLocked(note func(*nsOp)) {
	s.journal = slices.DeleteFunc(s.journal, func(op *nsOp) bool {
		note(op)
		if !op.durable() {
			return false
		}
		if op.trash != "" {
			os.RemoveAll(filepath.Join(s.trash, op.trash))
		}
		return true
	})
}

// syncedLocked settles the journal after an fsync that note applies, or
// makes every operation durable if the mount is ordered.
func (s *state) syncedLocked(note func(*nsOp)) {
	if s.ordered {
		note = func(op *nsOp) { op.waits = nil }
	}
	s.settleLocked(note)
}

// trashPathLocked returns a new path in the trash.
func (s *state) trashPathLocked() (name, path string) {
	s.trashSeq++
	name = strconv.Itoa(s.trashSeq)
	return name, filepath.Join(s.trash, name)
}

// undoLocked undoes the journal, newest first, and returns the descriptions
// of the operations undone, oldest first. Undoing is best effort: an
// operation is dropped if its directory was removed durably since, or if its
// old name was taken by a durable operation.
func (s *state) undoLocked() []string {
	r := &resolver{s: s, alias: map[uint64]uint64{}}
	var undone []string
	for i := len(s.journal) - 1; i >= 0; i-- {
		if op := s.journal[i]; r.undo(op) {
			undone = append(undone, op.desc)
		}
	}
	slices.Reverse(undone)
	return undone
}

// A resolver finds the directories of the backing tree by inode number.
type resolver struct {
	s     *state
	dirs  map[uint64]string // nil when it must be walked again
	alias map[uint64]uint64 // removed directory → the one that replaced it
}

// path returns the backing path of name in directory dir, if dir still exists.
func (r *resolver) path(dir uint64, name string) (string, bool) {
	if r.dirs == nil {
		r.walk()
	}
	if to, ok := r.alias[dir]; ok {
		dir = to
	}
	p, ok := r.dirs[dir]
	return filepath.Join(p, name), ok
}

// walk maps every directory of the backing tree, but the trash.
func (r *resolver) walk() {
	r.dirs = map[uint64]string{}
	filepath.WalkDir(r.s.backing, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || !d.IsDir():
			return nil
		case p == r.s.trash:
			return filepath.SkipDir
		}
		if ino, ok := inoAt(p); ok {
			r.dirs[ino] = p
		}
		return nil
	})
}

// undo undoes one operation, the newer ones undone, and reports whether
// that changed the backing tree.
func (r *resolver) undo(op *nsOp) bool {
	switch op.kind {
	case "create", "mknod", "symlink", "link":
		p, ok := r.path(op.dir, op.name)
		return ok && isIno(p, op.ino) && unix.Unlink(p) == nil
	case "mkdir":
		p, ok := r.path(op.dir, op.name)
		if !ok || !isIno(p, op.ino) {
			return false
		}
		r.dirs = nil
		return os.RemoveAll(p) == nil // with whatever was made durable inside: it is unreachable
	case "rmdir":
		return r.undoRmdir(op)
	case "unlink":
		return r.restore(op.trash, op.dir, op.name)
	case "rename":
		return r.undoRename(op)
	}
	return false
}

func (r *resolver) undoRmdir(op *nsOp) bool {
	p, ok := r.path(op.dir, op.name)
	if !ok || os.Mkdir(p, os.FileMode(op.mode&0o777)) != nil {
		return false
	}
	unix.Chmod(p, op.mode&0o7777)
	unix.Lchown(p, int(op.uid), int(op.gid))
	if ino, ok := inoAt(p); ok {
		r.alias[op.ino] = ino
	}
	r.dirs = nil
	return true
}

func (r *resolver) undoRename(op *nsOp) bool {
	from, ok1 := r.path(op.dir, op.name)
	to, ok2 := r.path(op.dir2, op.name2)
	moved := ok1 && ok2 && isIno(to, op.ino)
	switch {
	case !moved:
	case op.swap:
		moved = unix.Renameat2(unix.AT_FDCWD, to, unix.AT_FDCWD, from, unix.RENAME_EXCHANGE) == nil
	case unix.Renameat2(unix.AT_FDCWD, to, unix.AT_FDCWD, from, unix.RENAME_NOREPLACE) != nil:
		os.RemoveAll(to) // its old name was taken by a durable operation
	}
	if op.isDir {
		r.dirs = nil
	}
	restored := op.trash != "" && r.restore(op.trash, op.dir2, op.name2)
	return moved || restored
}

// restore moves a trash entry back to name in dir, or removes it if it
// cannot, and reports whether it could.
func (r *resolver) restore(trash string, dir uint64, name string) bool {
	src := filepath.Join(r.s.trash, trash)
	var st unix.Stat_t
	if unix.Lstat(src, &st) != nil {
		return false
	}
	dst, ok := r.path(dir, name)
	if !ok || unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE) != nil {
		os.RemoveAll(src)
		return false
	}
	if isDir(&st) {
		r.dirs = nil
	}
	return true
}

// inoAt returns the inode number of what is at p, not following symlinks.
func inoAt(p string) (uint64, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// isIno reports whether what is at p is inode ino.
func isIno(p string, ino uint64) bool {
	got, ok := inoAt(p)
	return ok && got == ino
}
