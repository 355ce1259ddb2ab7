package lazyfs

import (
	"bytes"
	"slices"
	"sort"

	"golang.org/x/sys/unix"
)

// A pending is what a file was told since its last sync: the extents written,
// kept in memory, and a truncation not yet applied to the backing file.
type pending struct {
	exts []extent // sorted by offset, disjoint and never adjacent
	cut  int64    // backing bytes at or past cut read as zeros; -1 if no truncation is pending
	size int64    // the file's size as its users see it
}

// An extent is data written at off and not yet synced.
type extent struct {
	off  int64
	data []byte
}

func (e extent) end() int64 { return e.off + int64(len(e.data)) }

// newPending returns the pending state of a file whose backing file is size bytes.
func newPending(size int64) pending {
	return pending{cut: -1, size: size}
}

// write records b at off, merging it with the extents it touches.
func (p *pending) write(off int64, b []byte) {
	if len(b) == 0 {
		return
	}
	end := off + int64(len(b))
	p.size = max(p.size, end)
	i := sort.Search(len(p.exts), func(i int) bool { return p.exts[i].end() >= off })
	j := sort.Search(len(p.exts), func(j int) bool { return p.exts[j].off > end })
	if i == j {
		p.exts = slices.Insert(p.exts, i, extent{off, bytes.Clone(b)})
		return
	}
	start, stop := min(off, p.exts[i].off), max(end, p.exts[j-1].end())
	var buf []byte
	from := i
	if p.exts[i].off == start {
		// Grow the first extent in place, so that appending to a log is amortized O(1).
		buf, from = p.exts[i].data, i+1
	}
	buf = slices.Grow(buf, int(stop-start)-len(buf))[:stop-start]
	for _, e := range p.exts[from:j] {
		copy(buf[e.off-start:], e.data)
	}
	copy(buf[off-start:], b)
	p.exts[i] = extent{start, buf}
	p.exts = slices.Delete(p.exts, i+1, j)
}

// truncate sets the size to n: extents past n are cut, and backing bytes past n read as zeros.
func (p *pending) truncate(n int64) {
	if p.cut < 0 || n < p.cut {
		p.cut = n
	}
	p.size = n
	i := sort.Search(len(p.exts), func(i int) bool { return p.exts[i].end() > n })
	if i < len(p.exts) && p.exts[i].off < n {
		p.exts[i].data = p.exts[i].data[:n-p.exts[i].off]
		i++
	}
	clear(p.exts[i:])
	p.exts = p.exts[:i]
}

// extend grows the size to at least n, as a preallocation does.
func (p *pending) extend(n int64) {
	p.size = max(p.size, n)
}

// read fills dst from off with the file as its users see it: base reads the
// backing file, and the extents are laid over it. It returns the bytes read,
// short at the end of the file.
func (p *pending) read(dst []byte, off int64, base func([]byte, int64) (int, error)) (int, error) {
	if off >= p.size {
		return 0, nil
	}
	dst = dst[:min(int64(len(dst)), p.size-off)]
	lim := int64(len(dst))
	if p.cut >= 0 {
		lim = max(0, min(lim, p.cut-off))
	}
	n, err := base(dst[:lim], off)
	if err != nil {
		return 0, err
	}
	clear(dst[n:])
	end := off + int64(len(dst))
	i := sort.Search(len(p.exts), func(i int) bool { return p.exts[i].end() > off })
	for _, e := range p.exts[i:] {
		if e.off >= end {
			break
		}
		lo, hi := max(e.off, off), min(e.end(), end)
		copy(dst[lo-off:hi-off], e.data[lo-e.off:hi-e.off])
	}
	return len(dst), nil
}

// written returns how many bytes the extents hold.
func (p *pending) written() int64 {
	var n int64
	for _, e := range p.exts {
		n += int64(len(e.data))
	}
	return n
}

// flush applies p to the backing file fd: the truncation, then the extents,
// then the size.
func (p *pending) flush(fd int) error {
	if p.cut >= 0 {
		if err := unix.Ftruncate(fd, p.cut); err != nil {
			return err
		}
	}
	for _, e := range p.exts {
		if err := pwriteFull(fd, e.data, e.off); err != nil {
			return err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Size != p.size {
		return unix.Ftruncate(fd, p.size)
	}
	return nil
}

// preadFull reads into b from off until b is full or the file ends.
func preadFull(fd int, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// pwriteFull writes all of b at off.
func pwriteFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		m, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, off = b[m:], off+int64(m)
	}
	return nil
}
