package checker

import (
	"os"
	"testing"
)

func TestDbgRetained(t *testing.T) {
	f, err := os.Open(os.Getenv("DBG_FILE"))
	if err != nil {
		t.Skip()
	}
	defer f.Close()
	s := NewStream(nil)
	i := 0
	ScanJSONL(f, func(e Event) error {
		s.Add(e)
		i++
		if i%200000 == 0 {
			m := map[string]int{}
			m["writes"] = len(s.writes)
			m["ctrq"] = len(s.ctrq)
			for _, p := range s.procs {
				m["queue"] += len(p.queue) - p.head
				m["pleases"] += len(p.leases)
			}
			for _, k := range s.keys {
				m["open"] += len(k.open)
				m["sweep"] += len(k.sweep)
				m["active"] += len(k.active)
				m["byStart"] += len(k.byStart)
				m["recent"] += len(k.recent)
				m["holds"] += len(k.holds)
				m["tries"] += len(k.tries)
				for _, st := range k.starve {
					m["starve"] += 1 + len(st.later)
				}
			}
			for _, c := range s.ctrs {
				m["maybes"] += len(c.maybes)
				m["oks"] += len(c.oks)
			}
			t.Log(i, m)
		}
		return nil
	})
	s.Close()
}
