package checker_test

import (
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
)

// gzipFile writes b gzipped to a file named name in a temporary folder.
func gzipFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckFile_Gzip(t *testing.T) {
	plain := filepath.Join("testdata", "double-grant.jsonl")
	b, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	zipped := gzipFile(t, checker.HistoryFileGz, b)
	want, _, err := checker.CheckFile(plain, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{zipped, filepath.Dir(zipped)} { // the file, and its folder
		got, sum, err := checker.CheckFile(path, nil, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		got.Elapsed, want.Elapsed = 0, 0
		if !reflect.DeepEqual(got, want) || sum.Events == 0 {
			t.Errorf("%s: %+v, want %+v", path, got, want)
		}
		h, err := checker.ReadFile(path)
		if err != nil || len(h) != sum.Events {
			t.Errorf("ReadFile(%s): %d events, %v; want %d", path, len(h), err, sum.Events)
		}
	}
}

func TestCheckFile_GzipMalformed(t *testing.T) {
	path := gzipFile(t, "bad.jsonl.gz", []byte(`{"index":0,"process":1,"type":"invoke","f":"acquire","time":1}`+"\nnot json\n"))
	_, _, err := checker.CheckFile(path, nil, time.Minute)
	var pe *checker.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 {
		t.Fatalf("err = %v, want a ParseError on line 2", err)
	}
}
