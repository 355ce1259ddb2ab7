// Package suggest finds the name a user probably meant, for "did you mean"
// hints on misspelled scenarios, suites, fields and fault kinds.
package suggest

import "strings"

// Closest returns the candidate nearest to name by edit distance, or "" if
// none is near enough to be a plausible typo: at most a third of the
// longer name's letters, and at least one, may differ. Case is ignored.
func Closest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if d > max(1, max(len(name), len(c))/3) {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Hint returns ` (did you mean "X"?)` for the closest candidate, or "".
func Hint(name string, candidates []string) string {
	if c := Closest(name, candidates); c != "" && c != name {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}

// distance is the Levenshtein distance between a and b, counting an
// adjacent transposition ("tll" for "ttl") as one edit.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
