package cluster

import "time"

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

// CutToDurable is cutToDurable, for a test of the journal without Redis.
func CutToDurable(dir string) (PowerCut, error) { return cutToDurable(dir) }
