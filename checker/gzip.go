package checker

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
)

// HistoryFileGz is the name of a compressed history inside a run folder,
// as a soak run writes it; every reader of a history also takes it.
const HistoryFileGz = HistoryFile + ".gz"

// OpenHistory opens the history file at path for reading, decompressing it
// when it is gzip (told by its first two bytes, not its name). Closing the
// reader closes the file.
func OpenHistory(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	if n < 2 || magic != [2]byte{0x1f, 0x8b} {
		return f, nil // plain: the file itself, which can seek (see ReadJSONL)
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		f.Close()
		return nil, err
	}
	return readCloser{zr, f}, nil
}

// A readCloser reads from one reader and closes the file under it.
type readCloser struct {
	io.Reader
	f *os.File
}

func (r readCloser) Close() error { return r.f.Close() }
