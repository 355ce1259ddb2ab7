// Package jsonline reads the lines of a history in JSON Lines form for
// package checker, and decodes the common ones without reflection.
//
// [Each] hands every non-blank line of a reader to a function, numbered
// from 1, however long the line. A [Decoder] decodes one line into a
// [Line] if it has the fixed shape a recorder writes (see the comment in
// decode.go) and reports whether it did; any other line, and any line
// whose type or f the caller does not know, is the caller's to decode with
// encoding/json, which defines the format. A Decoder shares repeated
// strings between lines and keeps their values in large blocks, so a long
// history costs few allocations.
//
// The package imports only the standard library.
package jsonline
