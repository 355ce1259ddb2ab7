package results

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// compareTmpl is parsed on first use, not at every command's start-up.
var compareTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("compare").Funcs(template.FuncMap{
		"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"p":   func(f float64) string { return fmt.Sprintf("%.3g", f) },
	}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>lockpick compare: {{.C.Scenario}}</title>
<style>body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:900px;color:#1d232b;padding:0 1em}
table{border-collapse:collapse;margin:1em 0}td,th{padding:.3em .8em;border-bottom:1px solid #e3e6ea;text-align:left}
.no{color:#c0152f;font-weight:bold}.bar{fill:#e0245e}.ci{stroke:#1d232b;stroke-width:1.5}.axis{stroke:#999}.lbl{font-size:12px}</style></head><body>
<h1>{{.C.Scenario}}: violation rate per arm</h1>
{{if .C.Shard}}<p class="no">Shard {{.C.Shard}}: partial counts and verdicts over this shard's trials only, and no Fisher test. Merge the shards (lockpick merge) for the comparison.</p>
{{end}}{{with .C.Unmatched}}<p class="no">NOT matched: {{range $i, $a := .}}{{if $i}}; {{end}}{{$a}}{{end}}.</p>
{{end}}<p>{{.C.Trials}} trials per arm, seed {{.C.Seed}}, {{printf "%.0f" .C.WallSeconds}} s in all. A violation is a conclusive trial whose history shows an anomaly; rates are over conclusive trials, and inconclusive trials (which prove nothing: see each arm's report) are counted apart. Whiskers: 95% Wilson interval.</p>
{{.Chart}}
<table><tr><th>arm</th><th>what</th><th>expect</th><th>observed</th><th>matched</th><th>violations / conclusive</th><th>inconclusive</th><th>rate</th><th>95% CI</th></tr>
{{range .C.Arms}}<tr><td><a href="{{.Dir}}/report.html">{{.Arm}}</a></td><td>{{.Summary}}</td><td>{{.Expect}}</td><td>{{.Observed}}</td>{{if .Matched}}<td>yes</td>{{else}}<td class="no">NOT matched</td>{{end}}<td>{{.Violations}}/{{.Conclusive}}</td><td>{{.Inconclusive}}</td><td>{{pct .Rate}}</td><td>[{{pct .Low}}, {{pct .High}}]</td></tr>
{{end}}</table>
{{range .C.Tests}}<p>Fisher exact test, {{.A}} vs {{.B}}: p = {{p .P}}</p>{{end}}
{{if .C.Tests}}<p class="lbl">{{.C.StatsNote}}</p>{{end}}
</body></html>`))
})

// WriteHTML renders the comparison as a page with a bar chart of the arms'
// violation rates and their confidence intervals.
func (c *Comparison) WriteHTML(w io.Writer) error {
	var buf bytes.Buffer
	err := compareTmpl().Execute(&buf, struct {
		C     *Comparison
		Chart template.HTML
	}{c, template.HTML(c.chart())})
	if err != nil {
		return fmt.Errorf("results: render comparison: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// WriteHTMLFile writes the comparison page to path atomically.
func (c *Comparison) WriteHTMLFile(path string) error {
	var buf bytes.Buffer
	if err := c.WriteHTML(&buf); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// chart draws one bar per arm, 0-100%, with the Wilson interval as a whisker.
func (c *Comparison) chart() string {
	const left, top, plotH, barW, gap = 50.0, 10.0, 200.0, 70.0, 90.0
	width := left + float64(len(c.Arms))*(barW+gap) + gap
	y := func(rate float64) float64 { return top + plotH*(1-rate) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f">`, width, top+plotH+40, width)
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line class="axis" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/><text class="lbl" x="4" y="%.1f">%.0f%%</text>`,
			left-4, width, y(t), y(t), y(t)+4, 100*t)
	}
	for i, a := range c.Arms {
		x := left + gap + float64(i)*(barW+gap)
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.0f" height="%.1f"><title>%s: %d/%d</title></rect>`,
			x, y(a.Rate), barW, plotH*a.Rate, html.EscapeString(a.Arm), a.Violations, a.Conclusive)
		cx := x + barW/2
		fmt.Fprintf(&b, `<line class="ci" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, cx, cx, y(a.High), y(a.Low))
		fmt.Fprintf(&b, `<line class="ci" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><line class="ci" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`,
			cx-8, cx+8, y(a.High), y(a.High), cx-8, cx+8, y(a.Low), y(a.Low))
		fmt.Fprintf(&b, `<text class="lbl" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, cx, top+plotH+18, html.EscapeString(a.Arm))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
