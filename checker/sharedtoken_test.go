package checker_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
)

// Two processes handed one token ("SET lock 1 NX") hold the lock at once:
// a double grant, whatever the tokens say, and a shared token beside it.
func TestCheck_SharedToken(t *testing.T) {
	res := checkFile(t, "shared-token.jsonl", map[checker.Kind]int{checker.DoubleGrant: 1, checker.SharedToken: 1})
	if len(res.Anomalies) != 2 {
		t.FailNow()
	}
	dg, st := res.Anomalies[0], res.Anomalies[1]
	if got, want := dg.Message, `process 2 was granted lock "lock" on n1 at +0.204s while process 1 held it (granted on n1 at +0.002s, until its release at +0.700s); leases overlapped for 296ms`; got != want {
		t.Errorf("double grant = %q\nwant           %q", got, want)
	}
	if got, want := st.Message, `processes 1 and 2 were both handed token "1" for lock "lock" (process 2 at +0.204s while process 1 held it): a lock that cannot tell its holders apart lets one holder's release free the other's lock`; got != want {
		t.Errorf("shared token = %q\nwant           %q", got, want)
	}
	if got, want := st.Processes, []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("processes = %v, want %v", got, want)
	}
	if !slices.Equal(st.Ops, dg.Ops) || len(st.Windows) != 2 || st.Key != "lock" {
		t.Errorf("shared token %+v, want the double grant's key, events and windows %+v", st, dg)
	}
	if at, ok := checker.ObservedAt(readHistory(t, "shared-token.jsonl"), st); !ok || at != 10204000000 {
		t.Errorf("observed at %d, %v; want the start of the overlap, 10204000000", at, ok)
	}
}

// The same history without grant numbers, as another tool would write it,
// is judged the same: tokens tell leases apart within a process only.
func TestCheck_SharedTokenWithoutGrants(t *testing.T) {
	h := readHistory(t, "shared-token.jsonl")
	for i := range h {
		h[i].Grant = 0
	}
	if got, want := checker.Check(h, nil).Counts(), (map[checker.Kind]int{checker.DoubleGrant: 1, checker.SharedToken: 1}); !maps.Equal(got, want) {
		t.Errorf("counts = %v, want %v", got, want)
	}
}

// A reentrant re-acquire by the holder, with its token and grant number,
// extends its lease; the next holder, handed the same token after the
// release, overlaps nothing.
func TestCheck_SharedTokenReentrant(t *testing.T) {
	checkFile(t, "shared-token-reentrant.jsonl", nil)
}

// A write belongs to the lease its grant number names: process 1 writes
// under its lease on "a", long expired and granted to process 2, while its
// lease on "b", with the same token, is valid.
func TestCheck_WriteNamesItsGrant(t *testing.T) {
	res := checkFile(t, "write-names-grant.jsonl", map[checker.Kind]int{checker.StaleWrite: 1})
	if len(res.Anomalies) == 1 && !strings.Contains(res.Anomalies[0].Message, `200ms after its lease on lock "a" expired`) {
		t.Errorf("message = %q, want the write judged under its lease on \"a\"", res.Anomalies[0].Message)
	}
}

// A lost notification belongs to the lease its grant number names: one for
// a lease already released does not end the holder's next lease, with the
// same token, which process 2's grant then overlaps.
func TestCheck_LostNamesItsGrant(t *testing.T) {
	checkFile(t, "lost-names-grant.jsonl", map[checker.Kind]int{checker.DoubleGrant: 1})
}
