package checker_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
)

// readHistory reads testdata/name.
func readHistory(tb testing.TB, name string) checker.History {
	tb.Helper()
	h, err := checker.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// checkFile checks testdata/name and compares the anomaly counts by kind
// with want; it returns the result for further checks.
func checkFile(tb testing.TB, name string, want map[checker.Kind]int) checker.Result {
	tb.Helper()
	res := checker.Check(readHistory(tb, name), nil)
	got := res.Counts()
	if len(got) != len(want) {
		tb.Errorf("%s: counts = %v, want %v\n%s", name, got, want, messages(res))
		return res
	}
	for k, n := range want {
		if got[k] != n {
			tb.Errorf("%s: counts = %v, want %v\n%s", name, got, want, messages(res))
			break
		}
	}
	wantVerdict := checker.Ok
	if len(want) > 0 {
		wantVerdict = checker.Illegal
	}
	if res.Verdict != wantVerdict {
		tb.Errorf("%s: verdict = %s, want %s", name, res.Verdict, wantVerdict)
	}
	return res
}

func messages(r checker.Result) string {
	var b strings.Builder
	for _, a := range r.Anomalies {
		b.WriteString("\t" + string(a.Kind) + ": " + a.Message + "\n")
	}
	for _, a := range r.Prevented {
		b.WriteString("\tprevented " + string(a.Kind) + ": " + a.Message + "\n")
	}
	return b.String()
}

// lockEvent is an event of process p on key "lock" at atMs, with its
// ValidUntil at validMs (0: none), milliseconds on the monotonic clock; the
// process's token is a letter of its own.
func lockEvent(p int, typ checker.Type, f string, atMs, validMs int64) checker.Event {
	const ms = int64(1_000_000)
	return checker.Event{Process: p, Type: typ, F: f, Key: "lock", Token: string(rune('a' + p)), Time: atMs * ms, ValidUntil: validMs * ms}
}

// indexed numbers h's events in order, and returns h.
func indexed(h checker.History) checker.History {
	for i := range h {
		h[i].Index = i
	}
	return h
}
