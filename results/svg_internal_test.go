package results

import (
	"strings"
	"testing"
)

// A label near the right edge ends there instead of running off the picture.
func TestLabelX_EndsNearTheRightEdge(t *testing.T) {
	if got := labelX(svgLeft + 10); strings.Contains(got, "text-anchor") {
		t.Errorf("a label on the left is anchored at its end: %s", got)
	}
	if got := labelX(svgLeft + svgWidth - 5); !strings.Contains(got, `text-anchor="end"`) {
		t.Errorf("a label at the right edge is not anchored at its end: %s", got)
	}
}

// A soak round is drawn over the round alone, its ticks in soak time.
func TestSVG_RoundDrawnOverItself(t *testing.T) {
	const sec = int64(1e9)
	tl := Timeline{Origin: 1, Start: 1 + 40*sec, End: 1 + 42*sec,
		Lanes: []Lane{{Process: 1, Leases: []Bar{{Start: 1 + 40*sec, End: 1 + 41*sec, Node: "n1", Label: "n1"}}}}}
	svg := tl.SVG()
	if !strings.Contains(svg, `x="90.0" y=`) || !strings.Contains(svg, ">+40.0s<") || strings.Contains(svg, ">+0.0s<") {
		t.Errorf("round not drawn from its first event with soak-time ticks:\n%s", svg)
	}
}
