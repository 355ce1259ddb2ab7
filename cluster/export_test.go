package cluster

import "time"

// SetChangeTimeout shortens the bound of one change to the links p adds
// from now on, so a test can wedge a link without waiting 10 s.
func (p *Proxies) SetChangeTimeout(d time.Duration) { p.timeout = d }
