package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A BenchResult is the acquire+release throughput of one subject.
type BenchResult struct {
	Subject string  `json:"subject"`
	Nodes   int     `json:"nodes"`
	Ops     int     `json:"ops"`
	OpsPerS float64 `json:"ops_per_s"`
	// Versus names the subject this one is compared with, and Ratio is
	// OpsPerS over that subject's.
	Versus string  `json:"versus,omitempty"`
	Ratio  float64 `json:"ratio,omitempty"`
}

// benchPairs are the subjects `lockpick bench` measures, each against the
// library it is compared with (the second of the pair).
var benchPairs = [][2]string{{"set-nx", "redislock"}, {"redlock", "redsync"}}

// Bench starts five masters under dir and measures, one after the other on
// the same nodes (reached directly, without proxies), how many
// acquire+release cycles per second each subject completes with one client.
// Single-node subjects use the first node; Redlock-style ones all five.
func Bench(ctx context.Context, dir string, ops int) ([]BenchResult, error) {
	backend, err := cluster.NewProcessBackend(filepath.Join(dir, "nodes"))
	if err != nil {
		return nil, &InfraError{Err: err}
	}
	defer backend.Close()
	c, err := cluster.Start(ctx, backend, cluster.Topology{Masters: 5})
	if err != nil {
		return nil, &InfraError{Err: err}
	}
	defer c.Close()
	var view View
	for _, n := range c.Nodes {
		view.Nodes = append(view.Nodes, NodeAddr{Name: n.Name, Addr: n.Proc.Addr()})
	}
	var out []BenchResult
	for _, pair := range benchPairs {
		var rates [2]float64
		for i, kind := range pair {
			r, err := benchOne(ctx, view, kind, ops)
			if err != nil {
				return nil, fmt.Errorf("bench %s: %w", kind, err)
			}
			rates[i] = r.OpsPerS
			out = append(out, r)
		}
		out[len(out)-2].Versus, out[len(out)-2].Ratio = pair[1], rates[0]/rates[1]
	}
	return out, nil
}

func benchOne(ctx context.Context, view View, kind string, ops int) (BenchResult, error) {
	tgt := newTarget(view)
	defer tgt.close()
	lock := Lock{Kind: kind, Key: "bench-" + kind, TTL: Duration(10 * time.Second), RetryDelay: Duration(time.Millisecond),
		NodeTimeout: Duration(50 * time.Millisecond)}
	subj := newSubject(SubjectConfig{tgt: tgt, Lock: lock, Process: 1})
	defer closeSubject(subj)
	cycle := func() error {
		if _, err := subj.Acquire(ctx); err != nil {
			return err
		}
		_, err := subj.Release(ctx)
		return err
	}
	for range min(ops/10, 200) { // warm up connections and script caches
		if err := cycle(); err != nil {
			return BenchResult{}, err
		}
	}
	start := time.Now()
	for range ops {
		if err := cycle(); err != nil {
			return BenchResult{}, err
		}
	}
	nodes := 1
	if kind == "redlock" || kind == "redsync" {
		nodes = len(view.Nodes)
	}
	return BenchResult{Subject: kind, Nodes: nodes, Ops: ops, OpsPerS: float64(ops) / time.Since(start).Seconds()}, nil
}
