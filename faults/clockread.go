package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// How a clock fault reads a node's wall clock back, on the node's own
// address (not its proxy), by kind of node: Redis answers TIME; a
// PostgreSQL backend, forked by the postmaster with its mapping of the
// clock file, answers clock_timestamp(); a ZooKeeper member tells no time
// but stamps each connection it accepts (cons's est, see
// [cluster.ZooKeeperClock]). Each gives a [timeReading] whose host time is
// the midpoint of the span in which the node read its clock.

// readClock reads n's wall clock back and says how, e.g. "read back with
// TIME": within a second from Redis, two from PostgreSQL and ZooKeeper,
// which start a backend or a session first (a JVM on a loaded machine).
func readClock(ctx context.Context, n *cluster.Node) (timeReading, string, error) {
	timeout := time.Second
	if cluster.IsPostgresNode(n) || cluster.IsZooKeeperMember(n) {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case cluster.IsPostgresNode(n):
		r, err := readPostgresClock(ctx, n.Proc.Addr())
		return r, "read back with clock_timestamp()", err
	case cluster.IsZooKeeperMember(n):
		est, from, to, err := cluster.ZooKeeperClock(n, timeout)
		if err != nil {
			return timeReading{}, "", err
		}
		return timeReading{server: est, host: from.Add(to.Sub(from) / 2), rtt: to.Sub(from)},
			"read back with cons: when the member accepted a connection", nil
	}
	rdb := timeClient(n.Proc.Addr())
	defer rdb.Close()
	r, err := readTime(ctx, rdb)
	return r, "read back with TIME", err
}

// readPostgresClock asks the PostgreSQL server at addr for
// clock_timestamp() three times on one connection and returns the reading
// with the shortest round trip.
func readPostgresClock(ctx context.Context, addr string) (timeReading, error) {
	conn, err := cluster.PostgresConnect(ctx, addr)
	if err != nil {
		return timeReading{}, fmt.Errorf("cluster: clock_timestamp(): %w", err)
	}
	defer conn.Close(context.Background())
	r, err := bestOf3(func() (srv time.Time, err error) {
		err = conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&srv)
		return srv, err
	})
	if err != nil {
		return timeReading{}, fmt.Errorf("cluster: clock_timestamp(): %w", err)
	}
	return r, nil
}
