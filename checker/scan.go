package checker

import (
	"io"

	"github.com/lockpick/lockpick/checker/internal/jsonline"
)

// ScanJSONL reads a history in JSON Lines form, as [ReadJSONL] does, and
// calls fn with each event in file order without holding the history, so
// memory stays flat however long it is. It stops at the first malformed
// line (a *[ParseError] with its line number, after fn has seen every event
// before it), the first error of fn (returned as is) or a read failure.
func ScanJSONL(r io.Reader, fn func(Event) error) error {
	var d decoder
	return jsonline.Each(r, func(line int, b []byte) error {
		var e Event
		if err := d.decode(b, &e); err != nil {
			return &ParseError{Line: line, Err: err}
		}
		return fn(e)
	})
}
