package checker

import (
	"bufio"
	"bytes"
	"io"
	"time"
)

// LeaseModelVerdicts runs the porcupine lease model on every lock key of h,
// including those where the interval check found a double grant, so tests
// can check that the two agree.
func LeaseModelVerdicts(h History, timeout time.Duration) map[string]Verdict {
	r := newRun(h, nil)
	var ps []*part
	for _, p := range r.parts() {
		if p.lease {
			ps = append(ps, p)
		}
	}
	search(ps, timeout)
	out := make(map[string]Verdict)
	for _, p := range ps {
		out[p.key] = map[string]Verdict{"Ok": Ok, "Illegal": Illegal, "Unknown": Unknown}[string(p.res)]
	}
	return out
}

// ReadJSONLStd is [ReadJSONL] as it was before the fast path: it reads line
// by line and decodes every line with encoding/json. Tests compare the two.
func ReadJSONLStd(r io.Reader) (History, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var h History
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			e, perr := parseEvent(b)
			if perr != nil {
				return nil, &ParseError{Line: line, Err: perr}
			}
			h = append(h, e)
		}
		if err == io.EOF {
			return h, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// DecodeFast decodes one line with the fast path alone, and reports whether
// the line had the shape it decodes.
func DecodeFast(line []byte) (Event, bool) {
	var e Event
	var d decoder
	ok := d.fast(line, &e)
	return e, ok
}
