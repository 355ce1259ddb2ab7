package campaign

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
	"github.com/lockpick/lockpick/trial"
)

// A BenchResult is the acquire+release throughput of one subject.
type BenchResult struct {
	Subject string `json:"subject"`
	Nodes   int    `json:"nodes"`
	Ops     int    `json:"ops"`
	// OpsPerS is the median of the subject's rates over the rounds.
	OpsPerS float64 `json:"ops_per_s"`
	// Versus names the subject this one is compared with; Ratio is the
	// median over the rounds of OpsPerS over that subject's rate in the same
	// round, and RatioMin and RatioMax its spread.
	Versus   string  `json:"versus,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	RatioMin float64 `json:"ratio_min,omitempty"`
	RatioMax float64 `json:"ratio_max,omitempty"`
}

// benchPairs are the subjects `lockpick bench` measures, each against the
// library it is compared with (the second of the pair).
var benchPairs = [][2]string{{"set-nx", "redislock"}, {"redlock", "redsync"}}

// Bench starts five masters under dir and measures how many acquire+release
// cycles per second each subject completes with one client, on the same
// nodes (reached directly, without proxies). Single-node subjects use the
// first node; Redlock-style ones all five. The ops cycles of each subject
// are split into rounds, and in each round the two subjects of a pair run
// one after the other, in alternating order, so that a machine whose speed
// drifts slows both alike: the ratio is the median of the rounds' ratios.
func Bench(ctx context.Context, dir string, ops, rounds int) ([]BenchResult, error) {
	rounds = max(1, min(rounds, ops))
	backend, err := cluster.NewProcessBackend(filepath.Join(dir, "nodes"))
	if err != nil {
		return nil, &trial.InfraError{Err: err}
	}
	defer backend.Close()
	c, err := cluster.Start(ctx, backend, cluster.Topology{Masters: 5})
	if err != nil {
		return nil, &trial.InfraError{Err: err}
	}
	defer c.Close()
	var view subject.View
	for _, n := range c.Nodes {
		view.Nodes = append(view.Nodes, subject.NodeAddr{Name: n.Name, Addr: n.Proc.Addr()})
	}
	var out []BenchResult
	for _, pair := range benchPairs {
		rs, err := benchPair(ctx, view, pair, ops, rounds)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// benchPair measures the two subjects of pair in interleaved rounds.
func benchPair(ctx context.Context, view subject.View, pair [2]string, ops, rounds int) ([]BenchResult, error) {
	var bs [2]*bencher
	for i, kind := range pair {
		b, err := newBencher(ctx, view, kind, ops)
		if err != nil {
			return nil, fmt.Errorf("bench %s: %w", kind, err)
		}
		defer b.close()
		bs[i] = b
	}
	var rates [2][]float64
	var ratios []float64
	per := ops / rounds
	for r := range rounds {
		var rate [2]float64
		for j := range 2 {
			i := j
			if r%2 == 1 {
				i = 1 - j // ABBA: each goes first in every other round
			}
			var err error
			if rate[i], err = bs[i].run(per); err != nil {
				return nil, fmt.Errorf("bench %s: %w", pair[i], err)
			}
			rates[i] = append(rates[i], rate[i])
		}
		ratios = append(ratios, rate[0]/rate[1])
	}
	out := make([]BenchResult, 2)
	for i, b := range bs {
		out[i] = BenchResult{Subject: pair[i], Nodes: b.nodes, Ops: per * rounds, OpsPerS: results.Median(rates[i])}
	}
	out[0].Versus, out[0].Ratio, out[0].RatioMin, out[0].RatioMax = pair[1], results.Median(ratios), slices.Min(ratios), slices.Max(ratios)
	return out, nil
}

// A bencher runs acquire+release cycles of one subject.
type bencher struct {
	cycle func() error
	close func()
	nodes int
}

func newBencher(ctx context.Context, view subject.View, kind string, ops int) (*bencher, error) {
	tgt := subject.NewTarget(view)
	lock := scenario.Lock{Kind: kind, Key: "bench-" + kind, TTL: scenario.Duration(10 * time.Second), RetryDelay: scenario.Duration(time.Millisecond),
		NodeTimeout: scenario.Duration(50 * time.Millisecond)}
	subj := subject.New(subject.Config{Target: tgt, Lock: lock, Process: 1})
	b := &bencher{close: func() { subject.Close(subj); tgt.Close() }, nodes: 1}
	if kind == "redlock" || kind == "redsync" {
		b.nodes = len(view.Nodes)
	}
	b.cycle = func() error {
		if _, err := subj.Acquire(ctx); err != nil {
			return err
		}
		_, err := subj.Release(ctx)
		return err
	}
	for range min(ops/10, 200) { // warm up connections and script caches
		if err := b.cycle(); err != nil {
			b.close()
			return nil, err
		}
	}
	return b, nil
}

// run times n cycles and returns their rate per second.
func (b *bencher) run(n int) (float64, error) {
	start := time.Now()
	for range n {
		if err := b.cycle(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
