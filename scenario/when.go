package scenario

import (
	"fmt"

	"github.com/lockpick/lockpick/checker"
)

// Moments a step's When can wait for.
const (
	// MomentAcquire is a client invoking an acquire, before its requests
	// leave: a fault injected then meets that acquire's requests and replies.
	MomentAcquire = "acquire"
	// MomentGranted is a client's acquire returning ok: the client holds
	// the lock.
	MomentGranted = "granted"
	// MomentRead is a client's read of the protected resource returning
	// ok: the holder has the value it will write back, plus one, after its
	// hold.
	MomentRead = "read"
	// MomentReleased is a client's release returning ok.
	MomentReleased = "released"
)

// momentEvents maps each moment to the history event that is it: its
// operation and type.
var momentEvents = map[string]struct {
	f   string
	typ checker.Type
}{
	MomentAcquire:  {checker.FAcquire, checker.Invoke},
	MomentGranted:  {checker.FAcquire, checker.OK},
	MomentRead:     {checker.FRead, checker.OK},
	MomentReleased: {checker.FRelease, checker.OK},
}

// A When is the moment a step waits for: what a client does, rather than
// the clock alone. The step fires at the first such event from its At
// (jitter included) until At+Within; if none comes, the moment never came
// and the trial is inconclusive.
type When struct {
	// Event is acquire, granted, read or released.
	Event string `json:"event" yaml:"event"`
	// Client is the client whose event it is, from 1.
	Client int `json:"client" yaml:"client"`
	// Nth, if above 0, is the moment's number among the client's events of
	// that kind since the trial (a soak's round) began: 2 is its second
	// release. default: the first from At.
	Nth int `json:"nth,omitempty" yaml:"nth"`
	// Delay, if above 0, is how long after the moment the step fires; the
	// client that brought the moment is not held for it and goes on.
	Delay Duration `json:"delay,omitempty" yaml:"delay"`
}

// String says the moment in words, e.g. "client 1 acquires" or "client 1
// releases (its 2nd release)".
func (w When) String() string {
	s := fmt.Sprintf("client %d %s", w.Client, momentWords[w.Event])
	if w.Nth > 0 {
		s += fmt.Sprintf(" (its %s %s)", ordinal(w.Nth), momentNouns[w.Event])
	}
	if w.Delay > 0 {
		s += fmt.Sprintf(", then %v", w.Delay.D())
	}
	return s
}

var momentWords = map[string]string{MomentAcquire: "acquires", MomentGranted: "is granted the lock",
	MomentRead: "has read the resource", MomentReleased: "releases"}

var momentNouns = map[string]string{MomentAcquire: "acquire", MomentGranted: "grant", MomentRead: "read", MomentReleased: "release"}

// ordinal returns "1st", "2nd", "3rd", "4th"...
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// validate returns a field (as the scenario file spells it, under when)
// and a message for the first problem, or "", "".
func (w When) validate(clients int) (field, msg string) {
	switch {
	case momentEvents[w.Event].f == "":
		return "event", fmt.Sprintf("must be %s, %s, %s or %s, not %q", MomentAcquire, MomentGranted, MomentRead, MomentReleased, w.Event)
	case w.Nth < 0:
		return "nth", "must not be negative"
	case w.Delay < 0:
		return "delay", "must not be negative"
	case w.Client < 1 || w.Client > clients:
		return "client", fmt.Sprintf("no client %d; clients are 1..%d", w.Client, clients)
	}
	return "", ""
}

// Is reports whether e is an event of the moment's kind, whatever its
// number.
func (w When) Is(e checker.Event) bool {
	m := momentEvents[w.Event]
	return e.Process == w.Client && e.F == m.f && e.Type == m.typ
}

// Counts reports whether e counts toward the moment's Nth: an event of its
// kind, or, for released, any release that returned, whatever its outcome:
// the Nth release is the release of the Nth hold, so a release whose reply
// was lost (unknown) still ends a hold.
func (w When) Counts(e checker.Event) bool {
	if w.Event == MomentReleased {
		return e.Process == w.Client && e.F == checker.FRelease && e.Type != checker.Invoke
	}
	return w.Is(e)
}
