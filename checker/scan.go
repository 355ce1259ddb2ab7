package checker

import (
	"bufio"
	"bytes"
	"io"
)

// ScanJSONL reads a history in JSON Lines form, as [ReadJSONL] does, and
// calls fn with each event in file order without holding the history, so
// memory stays flat however long it is. It stops at the first malformed
// line (a *[ParseError] with its line number, after fn has seen every event
// before it), the first error of fn (returned as is) or a read failure.
func ScanJSONL(r io.Reader, fn func(Event) error) error {
	var d decoder
	return eachLine(r, func(line int, b []byte) error {
		var e Event
		if err := d.decode(b, &e); err != nil {
			return &ParseError{Line: line, Err: err}
		}
		return fn(e)
	})
}

// eachLine calls fn with every line of r that is not blank, numbered from
// 1, and returns the first error of fn or of reading r. A line may end in
// its newline.
func eachLine(r io.Reader, fn func(line int, b []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than br's buffer
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if ferr := fn(line, b); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
