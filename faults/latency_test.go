package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/testcluster"
)

// rtt returns the fastest of three PINGs.
func rtt(tb testing.TB, rdb *redis.Client) time.Duration {
	tb.Helper()
	best := time.Hour
	for range 3 {
		start := time.Now()
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			tb.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	return best
}

func TestLatencyFault_DelaysRoundTrip(t *testing.T) {
	t.Parallel()
	c := testcluster.StartCluster(t, cluster.Topology{Masters: 2})
	const latency = 150 * time.Millisecond
	for i, tc := range []struct {
		fault *faults.LatencyFault
		want  time.Duration
	}{
		{&faults.LatencyFault{Latency: latency}, 2 * latency},
		{&faults.LatencyFault{Latency: latency, Direction: faults.ToNode}, latency},
	} {
		n := c.Nodes[i]
		t.Run(faults.Describe(tc.fault, nil), func(t *testing.T) {
			t.Parallel()
			rdb := testcluster.Client(t, n.Addr(), 5*time.Second)
			rtt(t, rdb) // open the connection
			testcluster.Inject(t, tc.fault, n)
			if got := rtt(t, rdb); got < tc.want || got > tc.want+100*time.Millisecond {
				t.Fatalf("PING took %v with %s, want %v (+100ms)", got, faults.Describe(tc.fault, n), tc.want)
			}
			testcluster.Heal(t, tc.fault, n)
			if got := rtt(t, rdb); got > 50*time.Millisecond {
				t.Fatalf("PING took %v after heal, want under 50ms", got)
			}
		})
	}
}
