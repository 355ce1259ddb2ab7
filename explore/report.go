package explore

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
)

//go:embed report.html.tmpl
var reportHTML string

// reportTmpl is parsed on first use, not at every command's start-up.
var reportTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("explore").Funcs(template.FuncMap{
		"join": func(xs []string) string { return strings.Join(xs, ", ") },
	}).Parse(reportHTML))
})

// findingView is one finding as the report shows it.
type findingView struct {
	Finding
	OriginalFaults, MinimalFaults []string
	OriginalSVG, MinimalSVG       template.HTML
	Clients                       int
	Hold, Duration, OriginalHold  string
	// FlakyText says what the replays of a flaky finding showed;
	// ReplayTrials is the trial count its replay command offers.
	FlakyText    string
	ReplayTrials int
}

type reasonCount struct {
	Reason string
	N      int
}

// writeReport renders report.html: the search over time, and each finding
// with its original and minimal schedules side by side on the lease timeline.
func writeReport(path string, base scenario.Scenario, res *Result) error {
	data := struct {
		R             *Result
		Unsafe, Incon int
		Reasons       []reasonCount
		Exercised     []reasonCount
		SearchSVG     template.HTML
		Findings      []findingView
	}{R: res, SearchSVG: template.HTML(searchSVG(res.Trials))}
	for _, t := range res.Trials {
		switch t.Observed {
		case evidence.Unsafe:
			data.Unsafe++
		case evidence.Inconclusive:
			data.Incon++
		}
	}
	for r, n := range res.Inconclusive {
		data.Reasons = append(data.Reasons, reasonCount{r, n})
	}
	slices.SortFunc(data.Reasons, func(a, b reasonCount) int { return b.N - a.N })
	for f, n := range res.Exercised {
		data.Exercised = append(data.Exercised, reasonCount{f, n})
	}
	slices.SortFunc(data.Exercised, func(a, b reasonCount) int { return strings.Compare(a.Reason, b.Reason) })
	for _, fd := range append(slices.Clone(res.Findings), res.Flaky...) {
		v := findingView{Finding: fd, Clients: fd.minimal.Clients, Hold: fd.minimal.Hold.D().String(), Duration: fd.minimal.Duration.D().String(),
			OriginalHold: fd.Original.Hold.D().String(), FlakyText: flakyText(fd), ReplayTrials: max(fd.Measured, 10)}
		for _, s := range fd.Original.Faults {
			v.OriginalFaults = append(v.OriginalFaults, stepText(s))
		}
		for _, s := range fd.Minimal {
			v.MinimalFaults = append(v.MinimalFaults, stepText(s))
		}
		v.OriginalSVG = template.HTML(results.NewTimeline(fd.originalTrial.History, fd.originalTrial.Check).SVG())
		if fd.minimalTrial != nil {
			v.MinimalSVG = template.HTML(results.NewTimeline(fd.minimalTrial.History, fd.minimalTrial.Check).SVG())
		}
		data.Findings = append(data.Findings, v)
	}
	var buf bytes.Buffer
	if err := reportTmpl().Execute(&buf, data); err != nil {
		return fmt.Errorf("explore: render report: %w", err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// flakyText says what the replays of a finding that was not confirmed
// showed, e.g. "Replayed, it broke the lock 1 of 3 times; 4 of 5 were needed."
func flakyText(fd Finding) string {
	if len(fd.Shrunk.Steps) == 0 {
		return fmt.Sprintf("It was not replayed (%d of %d replays were needed).", fd.Shrunk.K, fd.Shrunk.N)
	}
	c := fd.Shrunk.Steps[0]
	return fmt.Sprintf("Replayed, it broke the lock %d of %d times, and could no longer reach %d of %d.", c.Reproduced, c.Replays, fd.Shrunk.K, fd.Shrunk.N)
}

// searchSVG draws each trial as a dot at the time it ended, higher for
// schedules with more faults, colored by what it showed.
func searchSVG(trials []Tried) string {
	const w, h, pad = 1000.0, 160.0, 30.0
	end, most := 1.0, 1
	for _, t := range trials {
		end = max(end, t.EndedAt)
		most = max(most, len(t.Schedule.Faults))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg">`, w, h)
	fmt.Fprintf(&b, `<line class="tick" x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f"/>`, pad, h-pad, w-pad/2, h-pad)
	for i := 0; i <= 4; i++ {
		x := pad + (w-1.5*pad)*float64(i)/4
		fmt.Fprintf(&b, `<text class="tick-label" x="%.0f" y="%.0f" text-anchor="middle">%.0fs</text>`, x, h-pad+14, end*float64(i)/4)
	}
	for f := 1; f <= most; f++ {
		y := (h - pad) - (h-2*pad)*float64(f)/float64(most)
		fmt.Fprintf(&b, `<text class="tick-label" x="4" y="%.0f">%d</text>`, y+3, f)
	}
	for _, t := range trials {
		x := pad + (w-1.5*pad)*t.EndedAt/end
		y := (h - pad) - (h-2*pad)*float64(len(t.Schedule.Faults))/float64(most)
		fmt.Fprintf(&b, `<circle class="%s" cx="%.1f" cy="%.1f" r="4"><title>schedule %d: %s — %s</title></circle>`,
			template.HTMLEscapeString(t.Observed), x, y, t.Schedule.Index, template.HTMLEscapeString(t.Schedule.Describe()), template.HTMLEscapeString(t.Observed))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
