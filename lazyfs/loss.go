package lazyfs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A Loss is what one PowerLoss took.
type Loss struct {
	// Bytes is the number of unsynced bytes dropped from each file, by path
	// relative to the mountpoint; files that lost nothing are absent. A file
	// counts the bytes written to it since its last sync or, if none, the bytes
	// an unsynced truncation would have cut or added.
	Bytes map[string]int64
	// Undone lists the namespace operations undone, oldest first, e.g.
	// "rename temp-rewrite.aof → appendonly.aof", "create wal/0.tmp".
	Undone []string
}

// Total returns the bytes lost in all files.
func (l Loss) Total() int64 {
	var n int64
	for _, b := range l.Bytes {
		n += b
	}
	return n
}

// Empty reports whether nothing was lost.
func (l Loss) Empty() bool { return len(l.Bytes) == 0 && len(l.Undone) == 0 }

// String returns e.g. "lost 58 unsynced bytes of appendonlydir/x.aof; undid
// rename a → b" or "lost nothing (everything was synced)".
func (l Loss) String() string {
	if l.Empty() {
		return "lost nothing (everything was synced)"
	}
	var parts []string
	paths := slices.Sorted(maps.Keys(l.Bytes))
	switch len(paths) {
	case 0:
	case 1:
		parts = append(parts, fmt.Sprintf("lost %d unsynced bytes of %s", l.Total(), paths[0]))
	default:
		each := make([]string, len(paths))
		for i, p := range paths {
			each[i] = fmt.Sprintf("%d of %s", l.Bytes[p], p)
		}
		parts = append(parts, fmt.Sprintf("lost %d unsynced bytes (%s)", l.Total(), strings.Join(each, ", ")))
	}
	if len(l.Undone) > 0 {
		parts = append(parts, "undid "+strings.Join(l.Undone, ", "))
	}
	return strings.Join(parts, "; ")
}
