package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/results"
)

func newServeCmd() *cobra.Command {
	var addr, root string
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080] [--runs results/runs]",
		Short: "Browse run folders and their reports in a browser",
		Long: `Serve lists the run folders under --runs with their verdicts and serves their
files (report.html, histories, node logs). It listens on loopback only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return usageError("serve: --addr: " + err.Error())
			}
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return usageError("serve: --addr must be a loopback address (127.0.0.1:PORT)")
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return infraError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s on http://%s/\n", root, ln.Addr())
			srv := &http.Server{Handler: runsHandler(root), ReadHeaderTimeout: 5 * time.Second}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() { <-ctx.Done(); _ = srv.Close() }()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return infraError(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "loopback address to listen on")
	cmd.Flags().StringVar(&root, "runs", "results/runs", "folder of run folders")
	return cmd
}

// indexTmpl is parsed on first use, not at every command's start-up.
var indexTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>lockpick runs</title>
<style>body{font:15px system-ui,sans-serif;margin:2em auto;max-width:1000px}td,th{padding:.3em .8em;text-align:left;border-bottom:1px solid #e3e6ea}
.no{color:#c0392b;font-weight:600}</style></head><body><h1>lockpick runs</h1>
<table><tr><th>run</th><th>scenario</th><th>expect</th><th>observed</th><th>matched</th><th>trials with an anomaly</th></tr>
{{range .}}<tr><td><a href="{{.Name}}/report.html">{{.Name}}</a></td>
<td>{{.V.Scenario}}</td><td>{{.V.Expect}}</td><td>{{.V.Observed}}</td><td{{if not .V.Matched}} class="no"{{end}}>{{if .Compare}}compare{{else if .V.Matched}}yes{{else}}NOT matched{{end}}</td><td>{{if not .Compare}}{{.V.Tally "trial"}}{{end}}</td></tr>
{{else}}<tr><td colspan="6">no runs yet: lockpick run SCENARIO</td></tr>{{end}}</table></body></html>`))
})

type runRow struct {
	Name    string
	V       results.Verdict
	Compare bool
}

// runsHandler serves an index of run folders at / and their files below it.
func runsHandler(root string) http.Handler {
	files := http.FileServer(http.Dir(root))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			files.ServeHTTP(w, r)
			return
		}
		entries, _ := os.ReadDir(root)
		var rows []runRow
		for _, e := range entries {
			if !e.IsDir() || filepath.Ext(e.Name()) == ".partial" {
				continue
			}
			row := runRow{Name: e.Name()}
			if b, err := os.ReadFile(filepath.Join(root, e.Name(), "verdict.json")); err == nil {
				_ = json.Unmarshal(b, &row.V)
			} else if _, err := os.Stat(filepath.Join(root, e.Name(), "compare.json")); err == nil {
				row.Compare, row.V.Matched = true, true
			} else {
				continue
			}
			rows = append(rows, row)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].Name > rows[j].Name })
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = indexTmpl().Execute(w, rows)
	})
}
