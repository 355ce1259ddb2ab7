package results

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockpick/lockpick/checker"
)

// A Timeline is the data behind the report's picture of one trial: a lane per
// client with its leases, the faults, and the overlaps the checker found.
type Timeline struct {
	// Origin is the zero of the times the picture prints (the trial's, or
	// a soak's, start); the picture spans Start to End, its first and last
	// events, so a soak round is drawn over the round alone. Monotonic ns.
	Origin, Start, End int64
	Lanes              []Lane
	Faults             []FaultWindow
	Marks              []Mark
	Overlaps           []Overlap
}

// A Mark is an effect lockpick observed at one instant, e.g. "n3 back up,
// lock key absent" or "sentinels switched master from n1 to n2".
type Mark struct {
	Time  int64
	Label string
}

// A Lane is one client's leases.
type Lane struct {
	Process int
	Leases  []Bar
	Fails   []int64 // times of failed or unknown acquires
}

// A Bar is one lease, from grant to release or deadline.
type Bar struct {
	Start, End int64
	Node       string
	Label      string
}

// A FaultWindow is a fault from its injection to its healing (or the end).
type FaultWindow struct {
	Start, End int64
	Label      string
}

// An Overlap is a span where two leases were both valid, from a double grant.
type Overlap struct {
	Start, End int64
	Processes  []int
}

// NewTimeline builds the timeline of h with the anomalies of r.
func NewTimeline(h checker.History, r checker.Result) Timeline {
	t := Timeline{Origin: r.Origin}
	lanes := map[int]*Lane{}
	lane := func(p int) *Lane {
		if lanes[p] == nil {
			lanes[p] = &Lane{Process: p}
		}
		return lanes[p]
	}
	open := map[int]*Bar{}
	openFault := map[string]int{}
	for _, e := range h {
		t.End = max(t.End, e.Time)
		if t.Start == 0 || e.Time < t.Start {
			t.Start = e.Time
		}
		if t.Origin == 0 || e.Time < t.Origin {
			t.Origin = e.Time
		}
		switch {
		case e.F == checker.FNemesis && e.Type == checker.Info && strings.HasPrefix(e.Text(), checker.ObservedNote):
			t.Marks = append(t.Marks, Mark{Time: e.Time, Label: strings.TrimPrefix(e.Text(), checker.ObservedNote)})
		case e.F == checker.FNemesis && e.Type == checker.Invoke:
			// "heal X" closes the window "X" opened; a fault never healed
			// lasts until the end of the trial.
			if fault, ok := strings.CutPrefix(e.Text(), "heal "); ok {
				if i, open := openFault[fault]; open {
					t.Faults[i].End = e.Time
					delete(openFault, fault)
				}
				break
			}
			t.Faults = append(t.Faults, FaultWindow{Start: e.Time, End: -1, Label: e.Text()})
			openFault[e.Text()] = len(t.Faults) - 1
		case e.F == checker.FAcquire && e.Type == checker.OK:
			b := &Bar{Start: e.Time, End: e.ValidUntil, Node: e.Node, Label: fmt.Sprintf("%s fence %d", e.Node, e.Fence)}
			if e.Fence == 0 {
				b.Label = e.Node
			}
			open[e.Process] = b
		case e.F == checker.FLost:
			// the holder stops believing it holds the lock here
			if b := open[e.Process]; b != nil && (b.End == 0 || e.Time < b.End) {
				b.End = e.Time
			}
			t.Marks = append(t.Marks, Mark{Time: e.Time, Label: fmt.Sprintf("client %d told its lease is lost", e.Process)})
		case e.F == checker.FAcquire && (e.Type == checker.Fail || e.Type == checker.Info):
			lane(e.Process).Fails = append(lane(e.Process).Fails, e.Time)
		case e.F == checker.FRelease && e.Type == checker.Invoke:
			if b := open[e.Process]; b != nil {
				if b.End == 0 || e.Time < b.End {
					// the lease ends at its release, or earlier at its deadline
					b.End = e.Time
				}
				lane(e.Process).Leases = append(lane(e.Process).Leases, *b)
				delete(open, e.Process)
			}
		}
	}
	for p, b := range open {
		if b.End == 0 || b.End > t.End {
			b.End = t.End
		}
		lane(p).Leases = append(lane(p).Leases, *b)
	}
	for i := range t.Faults {
		if t.Faults[i].End < 0 {
			t.Faults[i].End = t.End
		}
	}
	for _, a := range r.Anomalies {
		if a.Kind != checker.DoubleGrant || len(a.Windows) < 2 {
			continue
		}
		w0, w1 := a.Windows[0], a.Windows[1]
		if s, e := max(w0.Start, w1.Start), min(w0.End, w1.End); e > s {
			t.Overlaps = append(t.Overlaps, Overlap{Start: s, End: e, Processes: []int{w0.Process, w1.Process}})
		}
	}
	for _, l := range lanes {
		t.Lanes = append(t.Lanes, *l)
	}
	sort.Slice(t.Lanes, func(i, j int) bool { return t.Lanes[i].Process < t.Lanes[j].Process })
	return t
}
