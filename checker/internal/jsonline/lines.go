package jsonline

import (
	"bufio"
	"bytes"
	"io"
)

// Each calls fn with every line of r that is not blank, numbered from 1,
// and returns the first error of fn or of reading r. A line may end in its
// newline, and b is valid only until fn returns.
func Each(r io.Reader, fn func(line int, b []byte) error) error {
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
