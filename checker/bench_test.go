package checker_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/checker/checkertest"
)

// bench100k is the history of the 100k benchmarks: 16 processes on 4 keys,
// 1% of acquires and writes with an unknown outcome.
var bench100k = checkertest.Options{Processes: 16, Keys: 4, Events: 100_000, TTL: time.Second, UnknownRate: 0.01, Seed: 1}

func reportEvents(b *testing.B, events int) {
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkReadJSONL100k(b *testing.B) {
	in := checkertest.JSONL(&bench100k)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		h, err := checker.ReadJSONL(bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		n = len(h)
	}
	reportEvents(b, n)
}

// BenchmarkScanJSONL100k parses the 100k history as a stream, event by
// event, without holding it.
func BenchmarkScanJSONL100k(b *testing.B) {
	in := checkertest.JSONL(&bench100k)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = 0
		if err := checker.ScanJSONL(bytes.NewReader(in), func(checker.Event) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, n)
}

// BenchmarkScanJSONLFile streams the history file named by
// $LOCKPICK_BENCH_HISTORY (make bench writes one of 10M events with
// checker/checkertest/genhistory) and reports events/s and the process's
// peak resident memory. It is skipped without the variable.
func BenchmarkScanJSONLFile(b *testing.B) {
	path := os.Getenv("LOCKPICK_BENCH_HISTORY")
	if path == "" {
		b.Skip("LOCKPICK_BENCH_HISTORY is not set")
	}
	var n int
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		err = checker.ScanJSONL(f, func(checker.Event) error { n++; return nil })
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, n)
	reportPeakRSS(b)
}

// reportPeakRSS reports the peak resident memory of the process so far.
func reportPeakRSS(b *testing.B) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB") // Maxrss is in KiB on Linux
	}
}

func BenchmarkCheck100k(b *testing.B) {
	h := checkertest.Generate(&bench100k)
	b.ReportAllocs()
	for b.Loop() {
		res := checker.CheckTimeout(h, nil, 10*time.Second)
		if res.Verdict != checker.Ok {
			b.Fatalf("verdict = %s, want ok\n%s", res.Verdict, messages(res))
		}
	}
	reportEvents(b, len(h))
}

// BenchmarkStream100k checks the 100k history, already parsed, as a
// stream: the check alone, as BenchmarkCheck100k does for Check.
func BenchmarkStream100k(b *testing.B) {
	h := checkertest.Generate(&bench100k)
	b.ReportAllocs()
	for b.Loop() {
		s := checker.NewStream(nil)
		for _, e := range h {
			if err := s.Add(e); err != nil {
				b.Fatal(err)
			}
		}
		if res, err := s.Close(); err != nil || res.Verdict != checker.Ok {
			b.Fatalf("verdict = %s, %v, want ok\n%s", res.Verdict, err, messages(res))
		}
	}
	reportEvents(b, len(h))
}

// BenchmarkCheckFile100k is what `lockpick check` does with a file: parse
// and check it as a stream, with CheckFile.
func BenchmarkCheckFile100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "100k.jsonl")
	if err := os.WriteFile(path, checkertest.JSONL(&bench100k), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		res, sum, err := checker.CheckFile(path, nil, 10*time.Second)
		if err != nil || sum.Fallback != nil || res.Verdict != checker.Ok {
			b.Fatalf("verdict = %s, %v, fallback %v, want ok, streamed", res.Verdict, err, sum.Fallback)
		}
		n = sum.Events
	}
	reportEvents(b, n)
}

// BenchmarkCheckFile streams the history file named by
// $LOCKPICK_BENCH_HISTORY through CheckFile, as BenchmarkScanJSONLFile
// streams it through the parser alone, and reports events/s and the
// process's peak resident memory. It is skipped without the variable.
func BenchmarkCheckFile(b *testing.B) {
	path := os.Getenv("LOCKPICK_BENCH_HISTORY")
	if path == "" {
		b.Skip("LOCKPICK_BENCH_HISTORY is not set")
	}
	var n int
	for b.Loop() {
		res, sum, err := checker.CheckFile(path, nil, time.Minute)
		if err != nil || sum.Fallback != nil {
			b.Fatalf("CheckFile: %v, fallback %v", err, sum.Fallback)
		}
		if res.Verdict != checker.Ok {
			b.Logf("verdict %s", res.Verdict)
		}
		n = sum.Events
	}
	reportEvents(b, n)
	reportPeakRSS(b)
}

// BenchmarkEndToEnd100k is what `lockpick check` did before it streamed,
// with a history already in memory: parse it whole, then Check it.
func BenchmarkEndToEnd100k(b *testing.B) {
	in := checkertest.JSONL(&bench100k)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		h, err := checker.ReadJSONL(bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		if res := checker.CheckTimeout(h, nil, 10*time.Second); res.Verdict != checker.Ok {
			b.Fatalf("verdict = %s, want ok", res.Verdict)
		}
		n = len(h)
	}
	reportEvents(b, n)
}

// BenchmarkReadJSONLSpeedup reports how many times faster ReadJSONL is than
// the encoding/json reader on the 100k history. The two run in turns, in
// alternating order, pairsPerOp times per iteration, so both see the same
// machine load; it reports the median ratio and its range over all turns.
func BenchmarkReadJSONLSpeedup(b *testing.B) {
	const pairsPerOp = 3
	in := checkertest.JSONL(&bench100k)
	read := func(f func(r *bytes.Reader) (checker.History, error)) time.Duration {
		runtime.GC() // each run starts from the same heap
		start := time.Now()
		if _, err := f(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	fast := func(r *bytes.Reader) (checker.History, error) { return checker.ReadJSONL(r) }
	std := func(r *bytes.Reader) (checker.History, error) { return checker.ReadJSONLStd(r) }
	var ratios []float64
	for b.Loop() {
		for range pairsPerOp {
			var tf, ts time.Duration
			if len(ratios)%2 == 0 {
				tf, ts = read(fast), read(std)
			} else {
				ts, tf = read(std), read(fast)
			}
			ratios = append(ratios, ts.Seconds()/tf.Seconds())
		}
	}
	med, lo, hi := spread(ratios)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(med, "speedup-median")
	b.ReportMetric(lo, "speedup-min")
	b.ReportMetric(hi, "speedup-max")
	b.Logf("encoding/json time / fast time over %d interleaved turns: median %.1fx, range %.1fx to %.1fx (%s)",
		len(ratios), med, lo, hi, ratioList(ratios))
}

// spread returns the median, the minimum and the maximum of xs.
func spread(xs []float64) (median, lo, hi float64) {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return median, s[0], s[n-1]
}

func ratioList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, " ")
}

func TestSpread(t *testing.T) {
	tests := []struct {
		in            []float64
		med, lo, high float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 2, 10}, 3, 1, 10},
	}
	for _, tt := range tests {
		med, lo, hi := spread(tt.in)
		if med != tt.med || lo != tt.lo || hi != tt.high {
			t.Errorf("spread(%v) = %v, %v, %v, want %v, %v, %v", tt.in, med, lo, hi, tt.med, tt.lo, tt.high)
		}
	}
}
