package cluster

import (
	"fmt"
	"strings"
)

// ParseClusterNodes parses CLUSTER NODES output for tests.
var ParseClusterNodes = parseClusterNodes

// DescribeClusterNodes renders parsed entries compactly for tests.
func DescribeClusterNodes(view []clusterEntry) string {
	var parts []string
	for _, e := range view {
		var r []string
		for _, s := range e.slots {
			r = append(r, fmt.Sprintf("%d-%d", s[0], s[1]))
		}
		parts = append(parts, fmt.Sprintf("%s %s %s epoch %d [%s]", e.id, e.addr, e.flags, e.configEpoch, strings.Join(r, " ")))
	}
	return strings.Join(parts, "; ")
}
