package explore

import (
	"testing"

	"github.com/lockpick/lockpick/results"
)

// TestSearcher_ShardsDealDisjointSchedules checks that n shards of one seed
// play every schedule of the unsharded search exactly once.
func TestSearcher_ShardsDealDisjointSchedules(t *testing.T) {
	const n, per = 3, 10
	seen := map[int]int{}
	for i := 1; i <= n; i++ {
		sr := &searcher{shard: results.Shard{Index: i, Count: n}}
		for k := range per {
			j := sr.schedule(k)
			if j%n != i-1 {
				t.Errorf("shard %d/%d played schedule %d, which belongs to shard %d", i, n, j, j%n+1)
			}
			seen[j]++
		}
	}
	for j := range n * per {
		if seen[j] != 1 {
			t.Errorf("schedule %d played %d times, want once", j, seen[j])
		}
	}
	if whole := (&searcher{}).schedule(5); whole != 5 {
		t.Errorf("unsharded search's 5th trial plays schedule %d", whole)
	}
}
