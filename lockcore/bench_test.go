package lockcore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncpool "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/lockcore"
)

// The benchmarks talk to the redis-server processes directly, not through
// their proxies, so that they measure the lock libraries and not toxiproxy.
// Every library gets the same settings: TTL, per-node timeout (redsync's
// default timeout factor, 5% of the TTL), drift factor and tries.
const (
	benchTTL         = 10 * time.Second
	benchNodeTimeout = benchTTL / 20
	benchTries       = 32
)

// A contender is one lock's acquire+release, failing the benchmark on error.
type contender struct {
	name string
	op   func(b *testing.B)
}

// benchContenders starts five nodes and returns lockpick's locks and the
// libraries they are compared with, all on those nodes.
func benchContenders(b *testing.B) []contender {
	c, _ := startNodes(b, 5)
	rdb := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		rdb[i] = redis.NewClient(&redis.Options{MaintNotificationsConfig: lockcore.NoMaintNotifications(), Addr: n.Proc.Addr()})
		b.Cleanup(func() { _ = rdb[i].Close() })
	}
	ctx := context.Background()
	var contenders []contender
	run := func(name string, op func(b *testing.B)) { contenders = append(contenders, contender{name, op}) }

	scripters := make([]redis.Scripter, len(rdb))
	pools := make([]redsyncpool.Pool, len(rdb))
	for i, r := range rdb {
		scripters[i] = r
		pools[i] = goredis.NewPool(r)
	}
	rl := lockcore.NewRedlock(scripters, "bench:redlock:lockpick", &lockcore.RedlockOptions{
		TTL: benchTTL, NodeTimeout: benchNodeTimeout, DriftFactor: 0.01, Tries: benchTries,
	})
	run("redlock5/lockpick", func(b *testing.B) {
		if _, err := rl.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := rl.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	})
	rs := redsync.New(pools...).NewMutex("bench:redlock:redsync",
		redsync.WithExpiry(benchTTL), redsync.WithTimeoutFactor(0.05), redsync.WithDriftFactor(0.01),
		redsync.WithTries(benchTries))
	run("redlock5/redsync", func(b *testing.B) {
		if err := rs.LockContext(ctx); err != nil {
			b.Fatal(err)
		}
		if ok, err := rs.UnlockContext(ctx); !ok || err != nil {
			b.Fatal(ok, err)
		}
	})

	m := lockcore.NewMutex(rdb[0], "bench:single:lockpick", &lockcore.Options{TTL: benchTTL})
	run("single/lockpick", func(b *testing.B) {
		if _, err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	})
	locker := redislock.New(rdb[0])
	run("single/redislock", func(b *testing.B) {
		lock, err := locker.Obtain(ctx, "bench:single:redislock", benchTTL, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := lock.Release(ctx); err != nil {
			b.Fatal(err)
		}
	})
	release := redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	if err := release.Load(ctx, rdb[0]).Err(); err != nil {
		b.Fatal(err)
	}
	rawKeys := []string{"bench:single:raw"}
	run("single/raw", func(b *testing.B) {
		if ok, err := rdb[0].SetNX(ctx, rawKeys[0], "token", benchTTL).Result(); !ok || err != nil {
			b.Fatal(ok, err)
		}
		if n, err := rdb[0].EvalSha(ctx, release.Hash(), rawKeys, "token").Int64(); n != 1 || err != nil {
			b.Fatal(n, err)
		}
	})

	return contenders
}

// BenchmarkAcquireRelease measures one acquire plus one release, without
// contention, for lockpick and for the libraries it is compared with, on
// the same nodes in one run, and logs lockpick's throughput ratios. Each
// contender runs its own b.N; BenchmarkAcquireReleaseRatio interleaves them.
func BenchmarkAcquireRelease(b *testing.B) {
	contenders := benchContenders(b)
	// Warm every contender up first (connections, scripts, stacks), so that
	// running first or last is no advantage.
	for range 200 {
		for _, c := range contenders {
			c.op(b)
		}
	}
	nsPerOp := map[string][]float64{} // one entry per -count run
	for _, c := range contenders {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.op(b)
			}
			nsPerOp[c.name] = append(nsPerOp[c.name], float64(b.Elapsed().Nanoseconds())/float64(b.N))
		})
	}

	// The median of the -count runs: a shared host makes single runs noisy.
	median := func(name string) float64 {
		xs := slices.Sorted(slices.Values(nsPerOp[name]))
		if len(xs) == 0 {
			return 0
		}
		return xs[len(xs)/2]
	}
	ratio := func(a, b string) string {
		if median(a) == 0 || median(b) == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f×", median(b)/median(a))
	}
	// b.Logf output of a parent benchmark only shows with -v.
	fmt.Printf("lockpick throughput, median of runs: redlock5 lockpick/redsync %s (want ≥ 1.30×), single lockpick/redislock %s (want ≥ 1.00×), single lockpick/raw %s (want ≥ 0.60×)\n",
		ratio("redlock5/lockpick", "redlock5/redsync"),
		ratio("single/lockpick", "single/redislock"),
		ratio("single/lockpick", "single/raw"))
}

// benchPairs are the ratios the README quotes: lockpick's lock, then the one
// it is compared with.
var benchPairs = [][2]string{
	{"redlock5/lockpick", "redlock5/redsync"},
	{"single/lockpick", "single/redislock"},
	{"single/lockpick", "single/raw"},
}

// BenchmarkAcquireReleaseRatio measures lockpick's throughput over each
// other library's round by round: each b.N iteration is one round in which
// both run 200 cycles, in alternating order (ABBA), so that a machine whose
// speed drifts slows both alike. It reports the median of the rounds'
// ratios and their range; run it with -benchtime 20x for 20 rounds.
func BenchmarkAcquireReleaseRatio(b *testing.B) {
	const cycles = 200
	byName := map[string]contender{}
	for _, c := range benchContenders(b) {
		byName[c.name] = c
		for range cycles { // warm up
			c.op(b)
		}
	}
	timed := func(b *testing.B, c contender) float64 {
		start := time.Now()
		for range cycles {
			c.op(b)
		}
		return float64(time.Since(start))
	}
	for _, p := range benchPairs {
		b.Run(p[0]+"-over-"+p[1], func(b *testing.B) {
			var ratios []float64
			for r := 0; b.Loop(); r++ {
				var ns [2]float64
				for j := range 2 {
					i := j
					if r%2 == 1 {
						i = 1 - j
					}
					ns[i] = timed(b, byName[p[i]])
				}
				ratios = append(ratios, ns[1]/ns[0]) // rate A over rate B
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
			b.ReportMetric(ratios[0], "ratio-min")
			b.ReportMetric(ratios[len(ratios)-1], "ratio-max")
		})
	}
}
