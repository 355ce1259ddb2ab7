package cluster

import (
	"fmt"
	"strings"
	"time"
)

// SetChangeTimeout shortens the bound of one change to the links p adds
// from now on, so a test can wedge a link without waiting 10 s.
func (p *Proxies) SetChangeTimeout(d time.Duration) { p.timeout = d }

// ReservePort reserves a port as the backends do, returning it and its
// release.
func ReservePort() (int, func(), error) {
	r, err := reservePort()
	if err != nil {
		return 0, nil, err
	}
	return r.port, r.Release, nil
}

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
