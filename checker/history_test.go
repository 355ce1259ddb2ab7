package checker_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
)

func TestReadJSONL_Errors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int
		want error // nil: any JSON error
	}{
		{"syntax", `{"index":0,"process":1,"type":"invoke","f":"read","time":1}` + "\n{\n", 2, nil},
		{"no index", `{"process":1,"type":"invoke","f":"read","time":1}`, 1, checker.ErrMissingIndex},
		{"no process", `{"index":0,"type":"invoke","f":"read","time":1}`, 1, checker.ErrMissingProcess},
		{"no time", `{"index":0,"process":1,"type":"invoke","f":"read"}`, 1, checker.ErrMissingTime},
		{"bad type", `{"index":0,"process":1,"type":"done","f":"read","time":1}`, 1, checker.ErrBadType},
		{"bad f", "\n\n" + `{"index":0,"process":1,"type":"ok","f":"cas","time":1}`, 3, checker.ErrBadF},
		{"wrong field type", `{"index":"0","process":1,"type":"ok","f":"read","time":1}`, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checker.ReadJSONL(strings.NewReader(tt.in))
			var pe *checker.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if got, want := pe.Line, tt.line; got != want {
				t.Errorf("line = %d, want %d", got, want)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if got, want := err.Error(), "line "; !strings.HasPrefix(got, want) {
				t.Errorf("message = %q, want prefix %q", got, want)
			}
		})
	}
}

func TestHistory_WriteJSONL(t *testing.T) {
	h := checker.History{
		{Index: 0, Process: 3, Type: checker.Invoke, F: "acquire", Key: "lock", Time: 123456789},
		{Index: 1, Process: 3, Type: checker.OK, F: "acquire", Key: "lock", Token: "9f", Fence: 41, ValidUntil: 1123456789, Node: "n1", Time: 123999999},
		{Index: 2, Process: 3, Type: checker.Invoke, F: "write", Key: "counter", Value: checker.IntValue(18), Fence: 41, Time: 124000000},
		{Index: 3, Process: -1, Type: checker.Info, F: "nemesis", Value: checker.TextValue("kill <n1> & \"n2\""), Time: 124200000},
		{Index: 4, Process: 3, Type: checker.Fail, F: "write", Key: "counter", Error: "fenced", Time: 124300000},
	}
	var buf bytes.Buffer
	if err := h.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(buf.String(), "\n"), len(h); got != want {
		t.Errorf("lines = %d, want %d", got, want)
	}
	if got, want := strings.SplitN(buf.String(), "\n", 2)[0], `{"index":0,"process":3,"type":"invoke","f":"acquire","key":"lock","time":123456789}`; got != want {
		t.Errorf("line 1 = %s, want %s", got, want)
	}
	back, err := checker.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, h) {
		t.Errorf("round trip = %+v, want %+v", back, h)
	}
	if got, want := back[3].Text(), `kill <n1> & "n2"`; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
	if got, ok := back[2].Int(); !ok || got != 18 {
		t.Errorf("Int() = %d, %v, want 18, true", got, ok)
	}
	if _, ok := back[3].Int(); ok {
		t.Errorf("Int() of a string value: ok = true, want false")
	}
	if _, ok := back[0].Int(); ok {
		t.Errorf("Int() of no value: ok = true, want false")
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	h := readHistory(t, "double-grant.jsonl")
	path := filepath.Join(dir, checker.HistoryFile)
	if err := checker.WriteFile(path, h); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, dir} {
		got, err := checker.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Errorf("ReadFile(%s) differs from what was written", p)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(entries), 1; got != want {
		t.Errorf("files in folder = %d, want %d (temporary file left behind?)", got, want)
	}
}

func TestReadFile_Errors(t *testing.T) {
	if _, err := checker.ReadFile(t.TempDir()); !errors.Is(err, checker.ErrNoHistory) {
		t.Errorf("empty folder: err = %v, want %v", err, checker.ErrNoHistory)
	}
	if _, err := checker.ReadFile(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want %v", err, os.ErrNotExist)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var pe *checker.ParseError
	if _, err := checker.ReadFile(bad); !errors.As(err, &pe) || pe.Line != 1 {
		t.Errorf("bad file: err = %v, want a *ParseError on line 1", err)
	}
}

func FuzzReadJSONL(f *testing.F) {
	for _, name := range []string{"double-grant.jsonl", "reentrant.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"index":0,"process":-1,"type":"info","f":"nemesis","value":"x","time":0}`))
	f.Add([]byte("{\"index\":1}\n\n{"))
	// Lines the fast path decodes, and lines it leaves to encoding/json.
	f.Add([]byte(" {\"time\":5, \"f\":\"read\",\"value\":-1.5e3,\"index\":1,\"x\":null,\"type\":\"ok\",\"process\":2}\r\n"))
	f.Add([]byte(`{"index":1,"process":2,"type":"ok","f":"read","time":3,"value":null,"key":"a","key":null,"fence":07}`))
	f.Add([]byte(`{"INDEX":1,"process":2,"type":"\u006fk","f":"read","time":3,"value":{"a":[1]},"error":"é"}`))
	f.Add([]byte(`{"index":1,"process":2,"type":"ok","f":"read","time":3,"index":null}` + "\n" + `{"index":1,`))
	f.Fuzz(func(t *testing.T, in []byte) {
		sameAsStd(t, "input", in)
		h, err := checker.ReadJSONL(bytes.NewReader(in))
		if err != nil {
			var pe *checker.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("err = %v, want a *ParseError with a line", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := h.WriteJSONL(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := checker.ReadJSONL(&buf)
		if err != nil {
			t.Fatalf("re-reading written history: %v", err)
		}
		if len(back) != len(h) {
			t.Fatalf("round trip: %d events, want %d", len(back), len(h))
		}
		checker.CheckTimeout(h, nil, time.Second) // must not panic
	})
}
