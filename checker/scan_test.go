package checker_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/checker/checkertest"
)

func TestScanJSONL(t *testing.T) {
	in := checkertest.JSONL(&checkertest.Options{Events: 2000, UnknownRate: 0.05, Seed: 4})
	want, err := checker.ReadJSONL(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("events", func(t *testing.T) {
		n := 0
		err := checker.ScanJSONL(bytes.NewReader(in), func(e checker.Event) error {
			if e.Index != want[n].Index || e.Time != want[n].Time || e.Key != want[n].Key {
				t.Fatalf("event %d = %+v, want %+v", n, e, want[n])
			}
			n++
			return nil
		})
		if err != nil || n != len(want) {
			t.Errorf("ScanJSONL: %d events, err %v; want %d, nil", n, err, len(want))
		}
	})
	t.Run("stops at fn's error", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		err := checker.ScanJSONL(bytes.NewReader(in), func(checker.Event) error {
			if n++; n == 10 {
				return stop
			}
			return nil
		})
		if got, want := err, stop; got != want || n != 10 {
			t.Errorf("err = %v after %d events, want %v after 10", got, n, want)
		}
	})
	t.Run("malformed line", func(t *testing.T) {
		bad := append(bytes.Clone(in[:bytes.IndexByte(in, '\n')+1]), "\n{\"index\":1}\n"...)
		n := 0
		err := checker.ScanJSONL(bytes.NewReader(bad), func(checker.Event) error { n++; return nil })
		var pe *checker.ParseError
		if !errors.As(err, &pe) || pe.Line != 3 || !errors.Is(err, checker.ErrMissingProcess) || n != 1 {
			t.Errorf("err = %v after %d events, want line 3: missing process after 1", err, n)
		}
	})
}
