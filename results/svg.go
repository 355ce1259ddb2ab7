package results

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Geometry of the timeline picture, in SVG user units.
const (
	svgLeft   = 90.0
	svgWidth  = 900.0
	svgLane   = 34.0
	svgTop    = 28.0
	svgBottom = 30.0
)

// nodeColors tells the nodes apart; a lease bar is colored by the node that granted it.
var nodeColors = []string{"#3b7dd8", "#2e9e6a", "#c77c1e", "#8a55c2", "#c2458a", "#4f8f9e"}

// SVG draws the timeline: a lane per client, leases as bars colored by node,
// failed acquires as ticks, faults as shaded bands, observed effects as
// dashed lines and double-grant overlaps in red.
func (t Timeline) SVG() string {
	start := t.Start
	if start == 0 {
		start = t.Origin
	}
	span := float64(max(t.End-start, 1))
	x := func(ns int64) float64 { return svgLeft + svgWidth*float64(ns-start)/span }
	height := svgTop + svgLane*float64(max(len(t.Lanes), 1)) + svgBottom
	if len(t.Marks) > 0 {
		height += 24 // two rows of mark labels under the axis
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="100%%">`, svgLeft+svgWidth+20, height)
	laneY := func(i int) float64 { return svgTop + svgLane*float64(i) }
	bottom := laneY(len(t.Lanes))
	for i, f := range t.Faults {
		w := max(x(f.End)-x(f.Start), 2)
		fmt.Fprintf(&b, `<rect class="fault" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
			x(f.Start), svgTop-6, w, bottom-svgTop+6, html.EscapeString(f.Label))
		fmt.Fprintf(&b, `<text class="fault-label" %s y="%.1f">%s</text>`, labelX(x(f.Start)+2), 10+float64(i%2)*10, html.EscapeString(f.Label))
	}
	colors := map[string]string{}
	for i, l := range t.Lanes {
		y := laneY(i)
		fmt.Fprintf(&b, `<text class="lane-label" x="4" y="%.1f">client %d</text>`, y+svgLane/2+4, l.Process)
		fmt.Fprintf(&b, `<line class="lane" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/>`, svgLeft, svgLeft+svgWidth, y+svgLane/2, y+svgLane/2)
		for _, bar := range l.Leases {
			c, ok := colors[bar.Node]
			if !ok {
				c = nodeColors[len(colors)%len(nodeColors)]
				colors[bar.Node] = c
			}
			fmt.Fprintf(&b, `<rect class="lease" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>client %d: lease on %s, %.3fs–%.3fs</title></rect>`,
				x(bar.Start), y+6, max(x(bar.End)-x(bar.Start), 1.5), svgLane-12, c, l.Process, html.EscapeString(bar.Node),
				sec(bar.Start-t.Origin), sec(bar.End-t.Origin))
			if x(bar.End)-x(bar.Start) > 30 {
				fmt.Fprintf(&b, `<text class="lease-label" x="%.1f" y="%.1f">%s</text>`, x(bar.Start)+3, y+svgLane/2+4, html.EscapeString(bar.Label))
			}
		}
		for _, f := range l.Fails {
			fmt.Fprintf(&b, `<line class="fail" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(f), x(f), y+svgLane/2-4, y+svgLane/2+4)
		}
	}
	for _, o := range t.Overlaps {
		fmt.Fprintf(&b, `<rect class="overlap" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>double grant: clients %v both held the lock for %.3fs</title></rect>`,
			x(o.Start), svgTop, max(x(o.End)-x(o.Start), 2), bottom-svgTop, o.Processes, sec(o.End-o.Start))
	}
	for i, m := range t.Marks {
		fmt.Fprintf(&b, `<line class="mark" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"><title>+%.3fs %s</title></line>`,
			x(m.Time), x(m.Time), svgTop-6, bottom+30+float64(i%2)*11, sec(m.Time-t.Origin), html.EscapeString(m.Label))
		fmt.Fprintf(&b, `<text class="mark-label" %s y="%.1f">%s</text>`, labelX(x(m.Time)+2), bottom+30+float64(i%2)*11, html.EscapeString(m.Label))
	}
	step := tick(span / 1e9)
	first := math.Ceil(float64(start-t.Origin)/1e9/step-1e-9) * step
	for s := first; s <= float64(t.End-t.Origin)/1e9; s += step {
		px := x(t.Origin + int64(s*1e9))
		fmt.Fprintf(&b, `<line class="tick" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><text class="tick-label" x="%.1f" y="%.1f">+%.1fs</text>`,
			px, px, bottom, bottom+4, px-8, bottom+16, s)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func sec(ns int64) float64 { return float64(ns) / 1e9 }

// tick picks a step in seconds giving about ten axis ticks.
func tick(total float64) float64 {
	for _, s := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60} {
		if total/s <= 12 {
			return s
		}
	}
	return 120
}

// labelX places a label that starts at x: from x rightwards, or, in the
// last fifth of the picture, ending at x so that it is not cut off at the
// right edge.
func labelX(x float64) string {
	if x > svgLeft+0.8*svgWidth {
		return fmt.Sprintf(`x="%.1f" text-anchor="end"`, x-4)
	}
	return fmt.Sprintf(`x="%.1f"`, x)
}
