package results

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CountsText writes anomaly counts by kind as "lost-update 1, stale-write
// 1" (sorted, zero counts left out), or "no anomaly".
func CountsText(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "no anomaly"
	}
	return strings.Join(parts, ", ")
}
