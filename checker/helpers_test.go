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
