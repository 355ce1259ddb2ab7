package lockcore_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/lockcore"
)

// scripters returns rdb as the []redis.Scripter NewRedlock takes.
func scripters(rdb []*redis.Client) []redis.Scripter {
	s := make([]redis.Scripter, len(rdb))
	for i, r := range rdb {
		s[i] = r
	}
	return s
}

// direct returns a client per node that bypasses the node's proxy, to look
// at a node's data while its link is faulty.
func direct(tb testing.TB, c *cluster.Cluster) []*redis.Client {
	tb.Helper()
	out := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = redis.NewClient(&redis.Options{MaintNotificationsConfig: lockcore.NoMaintNotifications(), Addr: n.Proc.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
		tb.Cleanup(func() { _ = out[i].Close() })
	}
	return out
}

// down kills node i and closes its link, so that clients are refused.
func down(tb testing.TB, c *cluster.Cluster, i int) {
	tb.Helper()
	if err := c.Nodes[i].Proc.Kill(); err != nil {
		tb.Fatal(err)
	}
	if err := c.Nodes[i].Link.Cut(); err != nil {
		tb.Fatal(err)
	}
}

// holders returns, per node, the value of key ("" when absent).
func holders(tb testing.TB, rdb []*redis.Client, key string) []string {
	tb.Helper()
	out := make([]string, len(rdb))
	for i, r := range rdb {
		v, err := r.Get(context.Background(), key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			tb.Fatalf("node %d: %v", i, err)
		}
		out[i] = v
	}
	return out
}

// eventually polls cond every 5ms until it holds or timeout passes.
func eventually(tb testing.TB, timeout time.Duration, cond func() bool) bool {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// warm loads the lock scripts on every node and opens two pooled
// connections to each, so that a fault added next hits requests and not
// script loading or connection handshakes: one connection for a request
// that times out (and is discarded), one for the release after it.
func warm(tb testing.TB, rdb []*redis.Client) {
	tb.Helper()
	ctx := context.Background()
	rl := lockcore.NewRedlock(scripters(rdb), "warm", &lockcore.RedlockOptions{WaitAll: true, NodeTimeout: time.Second})
	if _, err := rl.TryLock(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := rl.Unlock(ctx); err != nil {
		tb.Fatal(err)
	}
	for i, r := range rdb {
		a, b := r.Conn(), r.Conn()
		for _, c := range []*redis.Conn{a, b} {
			if err := c.Ping(ctx).Err(); err != nil {
				tb.Fatalf("node %d: %v", i, err)
			}
		}
		_, _ = a.Close(), b.Close()
	}
}

// fixedToken makes every attempt use token, so a test can find its keys.
func fixedToken(token string) func() string { return func() string { return token } }

// A steppingClock advances by Step on every reading.
type steppingClock struct {
	mu   sync.Mutex
	now  time.Time
	Step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.Step)
	return c.now
}

func TestRedlock_TryLock(t *testing.T) {
	_, rdb := startNodes(t, 5)
	ctx := context.Background()
	opt := &lockcore.RedlockOptions{TTL: 2 * time.Second, NodeTimeout: 200 * time.Millisecond, WaitAll: true}
	a := lockcore.NewRedlock(scripters(rdb), "lock", opt)
	b := lockcore.NewRedlock(scripters(rdb), "lock", opt)

	before := time.Now()
	lease, err := a.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lease.Nodes, []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("Nodes = %v, want %v", got, want)
	}
	if got := lease.ValidUntil().Sub(before); got > 2*time.Second || got < 2*time.Second-100*time.Millisecond {
		t.Errorf("validity = %v, want TTL minus drift (22ms)", got)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("second TryLock: err = %v, want ErrNotAcquired", err)
	}
	if got, want := holders(t, rdb, "lock"), slices.Repeat([]string{lease.Token}, 5); !slices.Equal(got, want) {
		t.Fatalf("keys = %q, want the lease token on every node (the loser released its own)", got)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Lost():
	default:
		t.Error("Lost() not closed after Unlock")
	}
	if got, want := holders(t, rdb, "lock"), make([]string, 5); !slices.Equal(got, want) {
		t.Errorf("keys after Unlock = %q, want none", got)
	}
	if err := a.Unlock(ctx); !errors.Is(err, lockcore.ErrReleased) {
		t.Errorf("second Unlock: err = %v, want ErrReleased", err)
	}
	if _, err := b.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
}

func TestRedlock_NodesDown(t *testing.T) {
	c, rdb := startNodes(t, 5)
	ctx := context.Background()
	rl := lockcore.NewRedlock(scripters(rdb), "lock", &lockcore.RedlockOptions{
		TTL: 2 * time.Second, NodeTimeout: 200 * time.Millisecond, WaitAll: true,
	})
	down(t, c, 1)
	down(t, c, 3)

	lease, err := rl.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with 2 of 5 nodes down: %v", err)
	}
	if got, want := lease.Nodes, []int{0, 2, 4}; !slices.Equal(got, want) {
		t.Errorf("Nodes = %v, want %v", got, want)
	}
	if err := rl.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with 2 of 5 nodes down: %v", err)
	}

	down(t, c, 4)
	_, err = rl.TryLock(ctx)
	if !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("TryLock with 3 of 5 nodes down: err = %v, want ErrNotAcquired", err)
	}
	var oe *lockcore.OpError
	if !errors.As(err, &oe) {
		t.Errorf("err = %v, want the node errors as *OpError", err)
	}
	if got := holders(t, rdb[:1], "lock"); got[0] != "" {
		t.Errorf("node 0 still holds %q after the failed attempt", got[0])
	}
	if rl.Lease() != nil {
		t.Error("Lease() != nil after a failed attempt")
	}
}

// TestRedlock_ReleaseAfterLostReply drops node 4's replies: its SET is
// applied but the client times out. Release-all removes the key there
// anyway; ReleaseAcquiredOnly (Redisson issue 1606) leaves it until its TTL.
func TestRedlock_ReleaseAfterLostReply(t *testing.T) {
	c, rdb := startNodes(t, 5)
	raw := direct(t, c)
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		acquiredOnly bool
		want         string // node 4's key after Unlock
	}{
		{"release-all", false, ""},
		{"release-acquired-only", true, "tok-release-acquired-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := "tok-" + tc.name
			rl := lockcore.NewRedlock(scripters(rdb), tc.name, &lockcore.RedlockOptions{
				TTL: 5 * time.Second, NodeTimeout: 100 * time.Millisecond, WaitAll: true,
				ReleaseAcquiredOnly: tc.acquiredOnly, Token: fixedToken(token),
			})
			warm(t, rdb)
			if err := c.Nodes[4].Link.AddToxic(ctx, "drop", "timeout", "downstream", map[string]any{"timeout": 0}); err != nil {
				t.Fatal(err)
			}
			lease, err := rl.TryLock(ctx)
			c.Nodes[4].Link.RemoveToxic(ctx, "drop")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := lease.Nodes, []int{0, 1, 2, 3}; !slices.Equal(got, want) {
				t.Errorf("Nodes = %v, want %v", got, want)
			}
			if got := holders(t, raw[4:], tc.name)[0]; got != token {
				t.Fatalf("node 4 holds %q, want %q: the SET should have been applied", got, token)
			}
			if err := rl.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if got := holders(t, raw[4:], tc.name)[0]; got != tc.want {
				t.Errorf("node 4 holds %q after Unlock, want %q", got, tc.want)
			}
		})
	}
}

// TestRedlock_FailedAttemptReleases makes an attempt fail (two nodes held by
// another client, node 4 answering too late) and checks which nodes the
// failed attempt released.
func TestRedlock_FailedAttemptReleases(t *testing.T) {
	c, rdb := startNodes(t, 5)
	raw := direct(t, c)
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		acquiredOnly bool
		want         []string
	}{
		{"release-all", false, []string{"other", "other", "", "", ""}},
		{"release-acquired-only", true, []string{"other", "other", "", "", "tok-release-acquired-only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := "tok-" + tc.name
			rl := lockcore.NewRedlock(scripters(rdb), tc.name, &lockcore.RedlockOptions{
				TTL: 5 * time.Second, NodeTimeout: 50 * time.Millisecond,
				ReleaseAcquiredOnly: tc.acquiredOnly, Token: fixedToken(token),
			})
			warm(t, rdb)
			for _, r := range raw[:2] {
				if err := r.Set(ctx, tc.name, "other", 5*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Nodes[4].Link.AddToxic(ctx, "slow", "latency", "downstream", map[string]any{"latency": 300}); err != nil {
				t.Fatal(err)
			}
			defer c.Nodes[4].Link.RemoveToxic(ctx, "slow")
			if _, err := rl.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
				t.Fatalf("TryLock: err = %v, want ErrNotAcquired", err)
			}
			var got []string
			if !eventually(t, 2*time.Second, func() bool {
				got = holders(t, raw, tc.name)
				return slices.Equal(got, tc.want)
			}) {
				t.Errorf("keys = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRedlock_SlowAcquisitionFails: when the acquisition took longer than
// the validity, the attempt fails even with every node granting, and the
// keys are released.
func TestRedlock_SlowAcquisitionFails(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	rl := lockcore.NewRedlock(scripters(rdb), "lock", &lockcore.RedlockOptions{
		TTL: time.Second, NodeTimeout: 200 * time.Millisecond, WaitAll: true,
		Clock: &steppingClock{now: time.Now(), Step: time.Second},
	})
	if _, err := rl.TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	if got, want := holders(t, rdb, "lock"), make([]string, 3); !slices.Equal(got, want) {
		t.Errorf("keys = %q, want none", got)
	}
}

func TestRedlock_Extend(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	rl := lockcore.NewRedlock(scripters(rdb), "lock", &lockcore.RedlockOptions{
		TTL: 2 * time.Second, NodeTimeout: 200 * time.Millisecond, WaitAll: true,
	})
	lease, err := rl.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := lease.ValidUntil()
	if err := rl.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if !lease.ValidUntil().After(old) {
		t.Error("Extend did not move the deadline")
	}
	for _, r := range rdb[1:] {
		r.Del(ctx, "lock") // the key expired on a majority, say
	}
	if err := rl.Extend(ctx); !errors.Is(err, lockcore.ErrNotHeld) {
		t.Fatalf("Extend without a majority: err = %v, want ErrNotHeld", err)
	}
	select {
	case <-lease.Lost():
	default:
		t.Error("Lost() not closed after Extend found the lock gone")
	}
	if err := rl.Unlock(ctx); !errors.Is(err, lockcore.ErrReleased) {
		t.Errorf("Unlock after losing the lease: err = %v, want ErrReleased", err)
	}
}

func TestRedlock_ExtendAfterDeadline(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	clock := &steppingClock{now: time.Now()}
	rl := lockcore.NewRedlock(scripters(rdb), "lock", &lockcore.RedlockOptions{
		TTL: 5 * time.Second, NodeTimeout: 200 * time.Millisecond, WaitAll: true, Clock: clock,
	})
	lease, err := rl.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clock.Step = 5 * time.Second // the client's clock is now past the deadline
	if err := rl.Extend(ctx); !errors.Is(err, lockcore.ErrExpired) {
		t.Fatalf("err = %v, want ErrExpired", err)
	}
	select {
	case <-lease.Lost():
	default:
		t.Error("Lost() not closed after the lease expired")
	}
}

func TestRedlock_Lock(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	opt := &lockcore.RedlockOptions{TTL: 5 * time.Second, NodeTimeout: 200 * time.Millisecond, RetryDelay: 20 * time.Millisecond}
	a := lockcore.NewRedlock(scripters(rdb), "lock", opt)
	b := lockcore.NewRedlock(scripters(rdb), "lock", opt)
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short); !errors.Is(err, lockcore.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held: err = %v, want ErrNotAcquired and DeadlineExceeded", err)
	}

	got := make(chan error, 1)
	go func() {
		_, err := b.Lock(ctx)
		got <- err
	}()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Lock after release: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lock did not return within 5s of the release")
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRedlock_NodeTimeoutWithoutContextTimeouts: a client without
// ContextTimeoutEnabled ignores context deadlines on its socket, yet a
// node that never answers still costs a call no more than NodeTimeout.
func TestRedlock_NodeTimeoutWithoutContextTimeouts(t *testing.T) {
	c, _ := startNodes(t, 3)
	ctx := context.Background()
	rdb := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		rdb[i] = redis.NewClient(&redis.Options{MaintNotificationsConfig: lockcore.NoMaintNotifications(), Addr: n.Addr(), MaxRetries: -1, ReadTimeout: time.Second})
		t.Cleanup(func() { _ = rdb[i].Close() })
	}
	warm(t, rdb)
	rl := lockcore.NewRedlock(scripters(rdb), "lock", &lockcore.RedlockOptions{
		TTL: 5 * time.Second, NodeTimeout: 50 * time.Millisecond, WaitAll: true,
	})
	if err := c.Nodes[2].Link.AddToxic(ctx, "drop", "timeout", "downstream", map[string]any{"timeout": 0}); err != nil {
		t.Fatal(err)
	}
	defer c.Nodes[2].Link.RemoveToxic(ctx, "drop")
	start := time.Now()
	lease, err := rl.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Without NodeTimeout it would wait for the silent node until ctx or the TTL (5s).
	if got, limit := time.Since(start), 2*time.Second; got > limit {
		t.Errorf("TryLock took %v with one node silent, want < %v (NodeTimeout 50ms)", got, limit)
	}
	if got, want := lease.Nodes, []int{0, 1}; !slices.Equal(got, want) {
		t.Errorf("Nodes = %v, want %v", got, want)
	}
}

// setCalls returns how many SET commands rdb's node has run.
func setCalls(tb testing.TB, rdb *redis.Client) int {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var n int
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
			n, _ = strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		}
	}
	return n
}

// TestRedlock_Sequential asks nodes one by one: it stops at a majority
// unless greedy, and with GiveUpEarly it does not take a node that cannot
// make a majority any more (seed 001, questions 2 and 6).
func TestRedlock_Sequential(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	base := lockcore.RedlockOptions{TTL: 2 * time.Second, NodeTimeout: 200 * time.Millisecond, Sequential: true, Order: []int{2, 0, 1}}

	a := lockcore.NewRedlock(scripters(rdb), "lock", &base)
	lease, err := a.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lease.Nodes, []int{2, 0}; !slices.Equal(got, want) {
		t.Errorf("stop at a majority: Nodes = %v, want %v (in Order)", got, want)
	}
	if got, want := holders(t, rdb, "lock"), []string{lease.Token, "", lease.Token}; !slices.Equal(got, want) {
		t.Errorf("stop at a majority: keys = %q, want %q", got, want)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	greedy := base
	greedy.Greedy = true
	g := lockcore.NewRedlock(scripters(rdb), "lock", &greedy)
	if lease, err = g.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := lease.Nodes, []int{2, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("greedy: Nodes = %v, want %v", got, want)
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Nodes 0 and 1 are held by two other clients: a split vote.
	for i, other := range []string{"other-1", "other-2"} {
		if err := rdb[i].Set(ctx, "lock", other, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	inOrder := base
	inOrder.Order = []int{0, 1, 2}
	for _, giveUp := range []bool{false, true} {
		o := inOrder
		o.GiveUpEarly = giveUp
		before := setCalls(t, rdb[2])
		if _, err := lockcore.NewRedlock(scripters(rdb), "lock", &o).TryLock(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
			t.Fatalf("GiveUpEarly=%v: err = %v, want ErrNotAcquired", giveUp, err)
		}
		asked := setCalls(t, rdb[2]) - before
		if want := map[bool]int{false: 1, true: 0}[giveUp]; asked != want {
			t.Errorf("GiveUpEarly=%v: node 2 was asked %d times, want %d", giveUp, asked, want)
		}
		if got := holders(t, rdb, "lock")[2]; got != "" {
			t.Errorf("GiveUpEarly=%v: node 2 holds %q after the failed attempt, want it released", giveUp, got)
		}
	}
}

// TestRedlock_KeysPerNode: with Keys, each node gets its own key, as
// Redlock over one Redis Cluster's primaries needs.
func TestRedlock_KeysPerNode(t *testing.T) {
	_, rdb := startNodes(t, 3)
	ctx := context.Background()
	nodes := []redis.Scripter{rdb[0], rdb[1], rdb[2]}
	keys := []string{"lock{a}", "lock{b}", "lock{c}"}
	l := lockcore.NewRedlock(nodes, "lock", &lockcore.RedlockOptions{TTL: 5 * time.Second, Keys: keys})
	lease, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Lock returns once a majority granted, each on its own key; the
	// third node's SET may still be on its way.
	if len(lease.Nodes) < 2 {
		t.Fatalf("granted by nodes %v, want a majority of 3", lease.Nodes)
	}
	for _, i := range lease.Nodes {
		if got := rdb[i].Get(ctx, keys[i]).Val(); got != lease.Token {
			t.Errorf("node %d granted, yet %s = %q, want the token", i, keys[i], got)
		}
	}
	for i := range keys {
		if n := rdb[i].Exists(ctx, "lock").Val(); n != 0 {
			t.Errorf("node %d has the plain key", i)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Unlock returns once a majority released; the rest follow.
	for i, k := range keys {
		deadline := time.Now().Add(2 * time.Second)
		for rdb[i].Exists(ctx, k).Val() != 0 {
			if time.Now().After(deadline) {
				t.Errorf("node %d kept %s after Unlock", i, k)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("NewRedlock accepted 2 keys for 3 nodes")
		}
	}()
	lockcore.NewRedlock(nodes, "lock", &lockcore.RedlockOptions{Keys: keys[:2]})
}
