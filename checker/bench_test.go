package checker_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
)

func BenchmarkCheck100k(b *testing.B) {
	h := generate(workload{Processes: 16, Keys: 4, Events: 100_000, TTL: time.Second, Seed: 1})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res := checker.CheckTimeout(h, nil, 10*time.Second)
		if res.Verdict != checker.Ok {
			b.Fatalf("verdict = %s, want ok\n%s", res.Verdict, messages(res))
		}
	}
}

func BenchmarkReadJSONL100k(b *testing.B) {
	h := generate(workload{Processes: 16, Keys: 4, Events: 100_000, TTL: time.Second, Seed: 1})
	var buf bytes.Buffer
	if err := h.WriteJSONL(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for b.Loop() {
		if _, err := checker.ReadJSONL(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}
