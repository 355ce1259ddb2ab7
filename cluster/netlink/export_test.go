package netlink

import "time"

// SetChangeTimeout shortens the bound of one change to the links p adds
// from now on, so a test can wedge a link without waiting 10 s.
func (p *Proxies) SetChangeTimeout(d time.Duration) { p.timeout = d }

// ReservePortForTest reserves a port as the backends do, returning it and
// its release.
func ReservePortForTest() (int, func(), error) {
	r, err := ReservePort()
	if err != nil {
		return 0, nil, err
	}
	return r.port, r.Release, nil
}
