package checker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lockpick/lockpick/checker/internal/jsonline"
)

// HistoryFile is the name of the history inside a run folder.
const HistoryFile = "history.jsonl"

// wireEvent mirrors Event with pointers for the fields that must be present.
type wireEvent struct {
	Index      *int            `json:"index"`
	Process    *int            `json:"process"`
	Type       Type            `json:"type"`
	F          string          `json:"f"`
	Key        string          `json:"key"`
	Token      string          `json:"token"`
	Grant      int             `json:"grant"`
	Fence      int64           `json:"fence"`
	ValidUntil int64           `json:"valid_until"`
	Value      json.RawMessage `json:"value"`
	Node       string          `json:"node"`
	Error      string          `json:"error"`
	Time       *int64          `json:"time"`
}

// ReadJSONL reads a history in JSON Lines form, one [Event] per line. Blank
// lines are skipped and unknown fields ignored. A malformed line, a missing
// index, process or time, or an unknown type or f yields a *[ParseError];
// a read failure is returned as is, unless a line before it is malformed.
func ReadJSONL(r io.Reader) (History, error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		if h, read, err := readTwice(rs); read {
			return h, err
		}
	}
	// Read it all to count the lines.
	var buf bytes.Buffer
	if l, ok := r.(interface{ Len() int }); ok {
		buf.Grow(l.Len() + bytes.MinRead)
	}
	_, rerr := buf.ReadFrom(r)
	h, err := readLines(&buf, lineEstimate(bytes.Count(buf.Bytes(), []byte{'\n'})+1, int64(buf.Len())))
	if err == nil && rerr != nil {
		return nil, rerr
	}
	return h, err
}

// readTwice reads rs once to count its lines and again to decode them, which
// touches less memory than holding the whole file. It returns read false,
// having read nothing, if rs cannot seek.
func readTwice(rs io.ReadSeeker) (h History, read bool, err error) {
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, false, nil
	}
	lines := 1
	var size int64
	buf := make([]byte, 64<<10)
	for {
		n, err := rs.Read(buf)
		lines += bytes.Count(buf[:n], []byte{'\n'})
		size += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			lines = 0 // read again, to report the error after the lines before it
			break
		}
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return nil, true, err
	}
	h, err = readLines(rs, lineEstimate(lines, size))
	return h, true, err
}

// minEventLen is less than the length of the shortest valid event line,
// e.g. {"index":0,"process":1,"type":"ok","f":"read","time":0}.
const minEventLen = 48

// lineEstimate bounds a count of newlines by what size bytes can hold in
// events, so that a file of blank lines does not reserve memory for events
// it cannot have.
func lineEstimate(lines int, size int64) int {
	return int(min(int64(lines), size/minEventLen+1))
}

// readLines decodes the lines of r. lines is the expected number of lines,
// 0 if unknown: a slice of events costs more to grow than to decode.
func readLines(r io.Reader, lines int) (History, error) {
	h := make(History, 0, lines)
	var d decoder
	err := jsonline.Each(r, func(line int, b []byte) error {
		if len(h) < cap(h) {
			h = h[:len(h)+1] // still zero; writing a zero event would cost a write barrier
		} else {
			h = append(h, Event{})
		}
		if perr := d.decode(b, &h[len(h)-1]); perr != nil {
			return &ParseError{Line: line, Err: perr}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, nil // as encoding/json's reader always did
	}
	return h[:len(h):len(h)], nil
}

// parseEvent decodes one line with encoding/json, which defines the format:
// the fast path of [decoder] hands it every line it is not sure about.
func parseEvent(b []byte) (Event, error) {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, err
	}
	switch {
	case w.Index == nil:
		return Event{}, ErrMissingIndex
	case w.Process == nil:
		return Event{}, ErrMissingProcess
	case w.Time == nil:
		return Event{}, ErrMissingTime
	case !validType(w.Type):
		return Event{}, fmt.Errorf("%w %q", ErrBadType, w.Type)
	case !validF(w.F):
		return Event{}, fmt.Errorf("%w %q", ErrBadF, w.F)
	}
	if string(w.Value) == "null" {
		w.Value = nil
	}
	return Event{
		Index: *w.Index, Process: *w.Process, Type: w.Type, F: w.F, Key: w.Key,
		Token: w.Token, Grant: w.Grant, Fence: w.Fence, ValidUntil: w.ValidUntil, Value: w.Value,
		Node: w.Node, Error: w.Error, Time: *w.Time,
	}, nil
}

// ReadFile reads a history from path, which is either a JSON Lines file
// (gzipped or not) or a run folder holding history.jsonl or history.jsonl.gz. It returns [ErrNoHistory] for a folder
// without one, a *[ParseError] for a malformed line, or the os error.
func ReadFile(path string) (History, error) {
	path, err := historyPath(path)
	if err != nil {
		return nil, err
	}
	f, err := OpenHistory(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := ReadJSONL(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// WriteJSONL writes h to w in JSON Lines form, one event per line, and
// returns the first write error.
func (h History) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range h {
		if err := enc.Encode(&h[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteFile writes h to path atomically: it writes a temporary file in the
// same folder and renames it over path, so a reader never sees half a
// history. On failure the temporary file is removed and path is untouched.
func WriteFile(path string, h History) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = h.WriteJSONL(f); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// A decoder decodes the lines of one history: those of the common shape
// with the fast path of package jsonline, without reflection, and the
// others with parseEvent.
type decoder struct{ d jsonline.Decoder }

// decode decodes one line, which may end in a newline, into e, which must
// be zero.
func (d *decoder) decode(b []byte, e *Event) error {
	if d.fast(b, e) {
		return nil
	}
	var err error
	*e, err = parseEvent(b)
	return err
}

// fast decodes b into e, which must be zero, if the fast path takes it and
// its type and f are known, and reports whether it did. When it does, *e
// equals what parseEvent returns; when it does not, *e holds garbage.
func (d *decoder) fast(b []byte, e *Event) (ok bool) {
	var l jsonline.Line
	if !d.d.Decode(b, &l) {
		return false
	}
	if e.Type, ok = knownType(l.Type); !ok {
		return false
	}
	if e.F, ok = knownF(l.F); !ok {
		return false
	}
	e.Index, e.Process, e.Time = l.Index, l.Process, l.Time
	e.Grant, e.Fence, e.ValidUntil = l.Grant, l.Fence, l.ValidUntil
	e.Key, e.Token, e.Node, e.Error = l.Key, l.Token, l.Node, l.Error
	e.Value = l.Value
	return true
}

func knownType(b []byte) (Type, bool) {
	switch string(b) {
	case "invoke":
		return Invoke, true
	case "ok":
		return OK, true
	case "fail":
		return Fail, true
	case "info":
		return Info, true
	}
	return "", false
}

func knownF(b []byte) (string, bool) {
	switch string(b) {
	case FAcquire:
		return FAcquire, true
	case FRelease:
		return FRelease, true
	case FExtend:
		return FExtend, true
	case FRead:
		return FRead, true
	case FWrite:
		return FWrite, true
	case FNemesis:
		return FNemesis, true
	case FLost:
		return FLost, true
	}
	return "", false
}
