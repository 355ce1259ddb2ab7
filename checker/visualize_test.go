package checker_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
)

func TestCheckVerbose(t *testing.T) {
	var buf bytes.Buffer
	res, err := checker.CheckVerbose(readHistory(t, "double-grant.jsonl"), nil, 10*time.Second, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Verdict, checker.Illegal; got != want {
		t.Errorf("verdict = %s, want %s", got, want)
	}
	html := buf.String()
	for _, want := range []string{"<html", "kill n1", "double-grant", `lock \"lock\"`, "grant b1"} {
		if !strings.Contains(html, want) {
			t.Errorf("visualization lacks %q", want)
		}
	}
}

func TestVisualizePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "viz.html")
	res, err := checker.VisualizePath(readHistory(t, "stale-write-fenced.jsonl"), nil, 10*time.Second, path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Verdict, checker.Ok; got != want {
		t.Errorf("verdict = %s, want %s", got, want)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"prevented stale-write", `counter \"counter\"`, "pause 1"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("visualization lacks %q", want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in folder, want 1", len(ents))
	}
	if _, err := checker.VisualizePath(nil, nil, 0, filepath.Join(dir, "missing", "viz.html")); err == nil {
		t.Errorf("writing into a missing folder: err = nil")
	}
}
