package results

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
)

// A Report is everything report.html shows about one run.
type Report struct {
	Verdict *Verdict
	// Summary and Explain describe the scenario in a line and a paragraph.
	Summary, Explain string
	// Trial is the trial the timeline shows (1-based), and Check its result.
	Trial    int
	Timeline Timeline
	Check    checker.Result
	// Evidence is what the shown trial proves.
	Evidence evidence.Evidence
	// Visualization is the relative link to porcupine's page, if any.
	Visualization string
}

//go:embed report.html.tmpl
var reportHTML string

// reportTmpl is parsed on first use, not at every command's start-up.
var reportTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"pct":  func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"sec":  func(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) },
		"join": func(xs []int) string { return strings.Trim(fmt.Sprint(xs), "[]") },
		"mb":   func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) },
		"at": func(s *float64) string {
			if s == nil {
				return "never"
			}
			return fmt.Sprintf("+%.3fs", *s)
		},
		"kinds": func(m map[string]int) []string {
			ks := make([]string, 0, len(m))
			for k, n := range m {
				ks = append(ks, fmt.Sprintf("%s × %d", k, n))
			}
			sort.Strings(ks)
			return ks
		},
	}).Parse(reportHTML))
})

// Unit is what the report calls one of its runs: "trial", or "round" in a soak.
func (r *Report) Unit() string {
	if r.Verdict == nil {
		return "trial"
	}
	return r.Verdict.Unit()
}

// WriteHTML renders the report as a self-contained HTML page.
func (r *Report) WriteHTML(w io.Writer) error {
	var buf bytes.Buffer
	if err := reportTmpl().Execute(&buf, struct {
		*Report
		SVG template.HTML
	}{r, template.HTML(r.Timeline.SVG())}); err != nil {
		return fmt.Errorf("results: render report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteHTMLFile writes the report to path atomically.
func (r *Report) WriteHTMLFile(path string) error {
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
