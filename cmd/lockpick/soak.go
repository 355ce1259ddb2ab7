package main

import (
	"fmt"
	"io"

	"github.com/lockpick/lockpick/results"
)

// printCheckNote prints the note that qualifies a soak's check, if any:
// the rounds checked whole, or events no round's check saw.
func printCheckNote(out io.Writer, sk *results.Soak) {
	if sk.CheckNote != "" {
		fmt.Fprintf(out, "  check note: %s\n", wrap(sk.CheckNote, 96, "    "))
	}
}
