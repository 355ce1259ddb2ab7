package checkertest_test

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/checker/checkertest"
)

func TestGenerate(t *testing.T) {
	opt := checkertest.Options{Processes: 6, Keys: 2, Events: 3000, UnknownRate: 0.05, Seed: 3}
	h := checkertest.Generate(&opt)
	if got := len(h); got < opt.Events || got > opt.Events+2 {
		t.Fatalf("events = %d, want %d to %d", got, opt.Events, opt.Events+2)
	}
	infos := 0
	for i, e := range h {
		if e.Index != i {
			t.Fatalf("event %d has index %d", i, e.Index)
		}
		if i > 0 && e.Time < h[i-1].Time {
			t.Fatalf("event %d at %d comes before event %d at %d", i, e.Time, i-1, h[i-1].Time)
		}
		if e.Type == checker.Info && e.F != checker.FNemesis {
			infos++
		}
	}
	if infos == 0 {
		t.Errorf("UnknownRate %v: no info completion", opt.UnknownRate)
	}
	if res := checker.CheckTimeout(h, nil, 10*time.Second); res.Verdict != checker.Ok {
		t.Errorf("verdict = %s, want %s: %v", res.Verdict, checker.Ok, res.Counts())
	}
	if again := checkertest.Generate(&opt); !reflect.DeepEqual(again, h) {
		t.Errorf("the same options gave a different history")
	}
	opt.Seed++
	if other := checkertest.Generate(&opt); reflect.DeepEqual(other, h) {
		t.Errorf("seeds %d and %d gave the same history", opt.Seed-1, opt.Seed)
	}
}

func TestGenerate_Defaults(t *testing.T) {
	h := checkertest.Generate(&checkertest.Options{Events: 500})
	procs, keys := make(map[int]bool), make(map[string]bool)
	for _, e := range h {
		if e.F == checker.FAcquire {
			procs[e.Process], keys[e.Key] = true, true
		}
	}
	if got, want := len(procs), 16; got != want {
		t.Errorf("processes = %d, want %d", got, want)
	}
	if got, want := len(keys), 4; got != want {
		t.Errorf("keys = %d, want %d", got, want)
	}
}

func TestJSONL(t *testing.T) {
	opt := &checkertest.Options{Events: 200, Seed: 9}
	h, err := checker.ReadJSONL(bytes.NewReader(checkertest.JSONL(opt)))
	if err != nil {
		t.Fatal(err)
	}
	if want := checkertest.Generate(opt); !reflect.DeepEqual(h, want) {
		t.Errorf("JSONL read back differs from Generate")
	}
}

func TestWriteJSONL(t *testing.T) {
	opt := &checkertest.Options{Processes: 5, Keys: 2, Events: 3000, UnknownRate: 0.05, BrokenRate: 0.02, PauseRate: 0.02, Fenced: true, Seed: 7}
	var streamed, whole bytes.Buffer
	if err := checkertest.WriteJSONL(&streamed, opt); err != nil {
		t.Fatal(err)
	}
	if err := checkertest.Generate(opt).WriteJSONL(&whole); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(streamed.Bytes(), whole.Bytes()) {
		t.Errorf("WriteJSONL differs from Generate(opt).WriteJSONL")
	}
}
