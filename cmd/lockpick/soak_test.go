package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/results"
)

// TestPrintCheckNote: the note that qualifies a soak's check is printed;
// without one, nothing is.
func TestPrintCheckNote(t *testing.T) {
	var b bytes.Buffer
	note := "round 3 was checked whole, as lockpick check checks its window"
	printCheckNote(&b, &results.Soak{CheckNote: note})
	if out := b.String(); !strings.Contains(out, "check note: "+note) {
		t.Errorf("printed %q; want the note", out)
	}
	b.Reset()
	printCheckNote(&b, &results.Soak{})
	if b.Len() != 0 {
		t.Errorf("printed %q without a note", b.String())
	}
}
