package checker

import (
	"encoding/json"
	"strconv"
)

// A Type says whether an [Event] invokes an operation or completes it, and how.
type Type string

// The event types, as in Jepsen.
const (
	Invoke Type = "invoke" // the operation started
	OK     Type = "ok"     // the operation completed and took effect
	Fail   Type = "fail"   // the operation completed and certainly took no effect
	Info   Type = "info"   // the outcome is unknown; a lone info is a nemesis note
)

// The operation names an [Event] may carry in F.
const (
	FAcquire = "acquire"
	FRelease = "release"
	FExtend  = "extend"
	FRead    = "read"
	FWrite   = "write"
	FNemesis = "nemesis"
	// FLost is a notification, not an operation: the holder's lock told it
	// the lease is gone (a watchdog that could not renew it in time). It is
	// one lone info event of the holder's process, with the lease's token.
	// The holder's certain ownership ends there; a write it makes under
	// that lease afterwards is judged as a write after the lease expired.
	FLost = "lost"
)

// An Event is one line of a history: the invocation or the completion of an
// operation by a process, or a fault injected by the nemesis (process -1).
// Times are CLOCK_MONOTONIC nanoseconds, comparable across processes on one
// host.
type Event struct {
	// A zero-size last field would be padded to a word; first, it is free.
	_ struct{} // disallow positional literals, for extensibility

	Index      int             `json:"index"`                 // position in the history, from 0
	Process    int             `json:"process"`               // client id; -1 for the nemesis
	Type       Type            `json:"type"`                  // invoke, ok, fail or info
	F          string          `json:"f"`                     // acquire, release, extend, read, write, nemesis or lost
	Key        string          `json:"key,omitempty"`         // lock key, or resource key for read and write
	Token      string          `json:"token,omitempty"`       // random token of the lease
	Grant      int             `json:"grant,omitempty"`       // the process's grant number, from 1; with Process it names the lease
	Fence      int64           `json:"fence,omitempty"`       // fencing token, 0 if none
	ValidUntil int64           `json:"valid_until,omitempty"` // monotonic ns deadline the client computed for its lease
	Value      json.RawMessage `json:"value,omitempty"`       // an int for read and write, a string for nemesis
	Node       string          `json:"node,omitempty"`        // node that granted or served the operation, e.g. "n1"
	Error      string          `json:"error,omitempty"`       // error text of a fail or info
	Time       int64           `json:"time"`                  // CLOCK_MONOTONIC ns
}

// ObservedNote starts the Value of a lone nemesis info event that records
// an effect the harness saw (a node back up, the sentinels switching
// masters) rather than a fault it injected, e.g. "observed: n1 down".
const ObservedNote = "observed: "

// IntValue returns n encoded as an [Event] Value.
func IntValue(n int64) json.RawMessage { return strconv.AppendInt(nil, n, 10) }

// TextValue returns s encoded as an [Event] Value (a JSON string).
func TextValue(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// Int returns the Value of e as an integer, and false if Value is absent or
// not an integer.
func (e Event) Int() (int64, bool) {
	if len(e.Value) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(e.Value), 10, 64)
	return n, err == nil
}

// Text returns the Value of e as text: the string if Value is a JSON string,
// the raw JSON otherwise, and "" if Value is absent.
func (e Event) Text() string {
	if len(e.Value) > 0 && e.Value[0] == '"' {
		var s string
		if json.Unmarshal(e.Value, &s) == nil {
			return s
		}
	}
	return string(e.Value)
}

// A History is a sequence of events in the order they were recorded.
type History []Event

func validType(t Type) bool {
	switch t {
	case Invoke, OK, Fail, Info:
		return true
	}
	return false
}

func validF(f string) bool {
	switch f {
	case FAcquire, FRelease, FExtend, FRead, FWrite, FNemesis, FLost:
		return true
	}
	return false
}
