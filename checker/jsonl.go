package checker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	// Sized once when r knows its length, as bytes.Reader and strings.Reader do.
	var buf bytes.Buffer
	if l, ok := r.(interface{ Len() int }); ok {
		buf.Grow(l.Len() + bytes.MinRead)
	}
	_, rerr := buf.ReadFrom(r)
	h, err := parseJSONL(buf.Bytes())
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	return h, nil
}

// parseJSONL decodes the lines of b. The history it returns shares no
// memory with b.
func parseJSONL(b []byte) (History, error) {
	// Sized once: growing a slice of events costs more than decoding them.
	h := make(History, bytes.Count(b, []byte{'\n'})+1)
	n := 0
	var d decoder
	for line := 1; len(b) > 0; line++ {
		l := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := d.decode(l, &h[n]); err != nil {
			return nil, &ParseError{Line: line, Err: err}
		}
		n++
	}
	h = h[:n:n]
	if len(h) == 0 {
		return nil, nil // as encoding/json's reader always did
	}
	return h, nil
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
		Token: w.Token, Fence: w.Fence, ValidUntil: w.ValidUntil, Value: w.Value,
		Node: w.Node, Error: w.Error, Time: *w.Time,
	}, nil
}

// ReadFile reads a history from path, which is either a JSON Lines file or a
// run folder holding history.jsonl. It returns [ErrNoHistory] for a folder
// without one, a *[ParseError] for a malformed line, or the os error.
func ReadFile(path string) (History, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		dir := path
		path = filepath.Join(dir, HistoryFile)
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, ErrNoHistory)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h, err := parseJSONL(b)
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
