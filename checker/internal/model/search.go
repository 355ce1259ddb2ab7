package model

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// A Part is one partition of the porcupine search: the lease operations of
// one lock key, or the reads and writes of one resource key.
type Part struct {
	Name  string // the partition's name in [Meta]
	Lease bool   // lease operations, else counter operations
	Key   string
	Ops   []porcupine.Operation
	Res   porcupine.CheckResult // set by [Search]
}

// What names the search of p, as a Result's TimedOut does.
func (p *Part) What() string {
	if p.Lease {
		return fmt.Sprintf("lease model on lock %q", p.Key)
	}
	return fmt.Sprintf("counter model on %q", p.Key)
}

// Search checks every partition with porcupine, at most GOMAXPROCS at a
// time, all within the given timeout (0 means none), and sets its Res;
// a partition not searched in time gets porcupine.Unknown.
func Search(parts []*Part, timeout time.Duration) {
	m := New()
	m.Partition = nil
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	deadline := time.Now().Add(timeout)
	for _, p := range parts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			left := time.Duration(0)
			if timeout > 0 {
				if left = time.Until(deadline); left <= 0 {
					p.Res = porcupine.Unknown
					return
				}
			}
			p.Res = porcupine.CheckOperationsTimeout(m, p.Ops, left)
		})
	}
	wg.Wait()
}
