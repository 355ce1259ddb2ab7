package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/etcdlock"
	"github.com/lockpick/lockpick/internal/testetcd"
	"github.com/lockpick/lockpick/lockcore"
)

const ttl = 2 * time.Second // etcd's minimum with lockpick's timings

// newClient returns a client of the given members' proxied endpoints,
// closed at cleanup.
func newClient(tb testing.TB, endpoints ...string) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// keys returns how many keys are under the lock's prefix.
func keys(tb testing.TB, cli *clientv3.Client, key string) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		tb.Fatal(err)
	}
	return resp.Count
}

// eventually polls fn every 20ms until it returns nil or timeout passes.
func eventually(tb testing.TB, timeout time.Duration, fn func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lockCtx(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// TestEtcdLock_TryLock: two clients contend, only one holds, and the fence
// grows from one holder to the next.
func TestEtcdLock_TryLock(t *testing.T) {
	c := testetcd.Start(t, 3)
	eps := c.EtcdEndpoints()
	a := etcdlock.New(newClient(t, eps[0]), "lk", &etcdlock.Options{TTL: ttl})
	b := etcdlock.New(newClient(t, eps[1]), "lk", &etcdlock.Options{TTL: ttl})
	ctx := lockCtx(t, 10*time.Second)
	ga, err := a.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, etcdlock.ErrNotAcquired) || !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("second TryLock: %v, want ErrNotAcquired", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ga.Lost():
	case <-time.After(time.Second):
		t.Error("the released grant's Lost did not fire")
	}
	gb, err := b.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gb.Fence <= ga.Fence {
		t.Errorf("fences %d then %d, want growing", ga.Fence, gb.Fence)
	}
	if !gb.ValidUntil().After(time.Now()) {
		t.Errorf("fresh grant valid until %v, before now", gb.ValidUntil())
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, etcdlock.ErrReleased) {
		t.Errorf("second Unlock: %v, want ErrReleased", err)
	}
}

// TestEtcdLock_HolderCutOff: the holder's member is cut off from it, its lease
// expires, it is told (Lost), and the waiter gets the lock with a higher
// fence.
func TestEtcdLock_HolderCutOff(t *testing.T) {
	c := testetcd.Start(t, 3)
	holderNode, waiterNode := c.Etcd[0], c.Etcd[1]
	h := etcdlock.New(newClient(t, holderNode.Link.Addr()), "lk", &etcdlock.Options{TTL: ttl})
	w := etcdlock.New(newClient(t, waiterNode.Link.Addr()), "lk", &etcdlock.Options{TTL: ttl})
	ctx := lockCtx(t, 20*time.Second)
	gh, err := h.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   *etcdlock.Grant
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		g, err := w.Lock(ctx)
		done <- result{g, err, time.Now()}
	}()
	cut := time.Now()
	if err := holderNode.Link.Cut(); err != nil {
		t.Fatal(err)
	}
	var lostAt time.Time
	select {
	case <-gh.Lost():
		lostAt = time.Now()
	case <-time.After(3 * ttl):
		t.Fatalf("holder cut off for %v and not told", 3*ttl)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	valid := gh.ValidUntil().Sub(cut)
	t.Logf("cut at 0: holder valid until %v, lost at %v, waiter granted at %v (TTL %v); fences %d then %d",
		valid.Round(time.Millisecond), lostAt.Sub(cut).Round(time.Millisecond), r.at.Sub(cut).Round(time.Millisecond), ttl, gh.Fence, r.g.Fence)
	if valid > r.at.Sub(cut) {
		t.Errorf("holder's ValidUntil (%v after the cut) is after the waiter's grant (%v)", valid, r.at.Sub(cut))
	}
	if r.g.Fence <= gh.Fence {
		t.Errorf("fences %d then %d, want growing", gh.Fence, r.g.Fence)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// TestEtcdLock_WaitEndsWithItsContext: a waiter whose only member freezes
// (SIGSTOP) while it waits returns when its context ends, an indeterminate
// error, instead of waiting for good in the Mutex's clean-up (its key's
// delete, sent with the client's own context).
func TestEtcdLock_WaitEndsWithItsContext(t *testing.T) {
	c := testetcd.Start(t, 3)
	hcli, member := newClient(t, c.Etcd[0].Link.Addr()), c.Etcd[1]
	h := etcdlock.New(hcli, "lk", &etcdlock.Options{TTL: ttl})
	w := etcdlock.New(newClient(t, member.Link.Addr()), "lk", &etcdlock.Options{TTL: ttl})
	if _, err := h.Lock(lockCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	ctx := lockCtx(t, 2*time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := w.Lock(ctx)
		done <- err
	}()
	eventually(t, 1500*time.Millisecond, func() error { // the waiter's key is in: it waits
		if n := keys(t, hcli, "lk"); n != 2 {
			return fmt.Errorf("%d keys under the lock, want the holder's and the waiter's", n)
		}
		return nil
	})
	if err := member.Proc.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = member.Proc.Resume() }) // before the clients close
	select {
	case err := <-done:
		var op *lockcore.OpError
		if !errors.As(err, &op) || !op.Indeterminate {
			t.Errorf("waiter's Lock: %v, want an indeterminate *lockcore.OpError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter's Lock outlived its 2s context by more than 3s, its member frozen")
	}
}

// TestEtcdLock_RequireLeaderRefusesWithoutALeader: through a member cut
// off from the others, once it has lost its leader, an acquire with
// RequireLeader fails with "no leader"; without it the acquire waits until
// its context ends.
func TestEtcdLock_RequireLeaderRefusesWithoutALeader(t *testing.T) {
	c := testetcd.Start(t, 3)
	ctx := lockCtx(t, 30*time.Second)
	fs, err := c.EtcdFollowers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cli := newClient(t, fs[0].Link.Addr())
	if err := c.PartitionEtcd(fs[0].Name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.HealEtcdPartition() })
	eventually(t, 10*time.Second, func() error { // the precondition, read from the member
		st, err := cli.Status(lockCtx(t, time.Second), fs[0].Link.Addr())
		switch {
		case err != nil:
			return err
		case st.Leader != 0:
			return fmt.Errorf("%s: leader %x, want none", fs[0].Name, st.Leader)
		}
		return nil
	})
	for _, require := range []bool{true, false} {
		l := etcdlock.New(cli, "lk", &etcdlock.Options{TTL: ttl, RequireLeader: require})
		// Without RequireLeader the acquire waits for its 3 s context. With
		// it, "no leader" came 2.6 s after the call on an idle machine, not
		// at once, and under CI's load a 3 s context ended first: its bound
		// is one a loaded machine cannot cross.
		wait, want := 3*time.Second, "deadline exceeded"
		if require {
			wait, want = 30*time.Second, "no leader"
		}
		began := time.Now()
		_, err := l.Lock(lockCtx(t, wait))
		t.Logf("RequireLeader %v: %v after %v", require, err, time.Since(began).Round(time.Millisecond))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("RequireLeader %v: %v, want an error saying %q", require, err, want)
		}
	}
}

// TestEtcdLock_HolderMemberPartitioned: the follower the holder talks to
// is cut off from the other members (the holder still reaches it). Its
// keep-alives, forwarded to the leader, no longer arrive: the lease
// expires on the majority, the waiter there is granted with a higher
// fence, and the holder is told when its keep-alives go unanswered.
func TestEtcdLock_HolderMemberPartitioned(t *testing.T) {
	c := testetcd.Start(t, 3)
	ctx := lockCtx(t, 20*time.Second)
	fs, err := c.EtcdFollowers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader, err := c.EtcdLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := etcdlock.New(newClient(t, fs[0].Link.Addr()), "lk", &etcdlock.Options{TTL: ttl})
	w := etcdlock.New(newClient(t, leader.Link.Addr()), "lk", &etcdlock.Options{TTL: ttl})
	gh, err := h.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var gw *etcdlock.Grant
	go func() {
		var err error
		gw, err = w.Lock(ctx)
		done <- err
	}()
	cut := time.Now()
	if err := c.PartitionEtcd(fs[0].Name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.HealEtcdPartition() })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	granted := time.Since(cut)
	select {
	case <-gh.Lost():
	case <-time.After(3 * ttl):
		t.Fatalf("holder's member cut off for %v and the holder not told", 3*ttl)
	}
	// Lost may come after the waiter's grant (the client notices a TTL
	// after the last reply, checked every 500ms); ValidUntil may not.
	valid := gh.ValidUntil().Sub(cut)
	t.Logf("%s cut off at 0: holder valid until %v, waiter granted at %v, holder lost at %v (TTL %v); fences %d then %d",
		fs[0].Name, valid.Round(time.Millisecond), granted.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond), ttl, gh.Fence, gw.Fence)
	if valid > granted {
		t.Errorf("holder's ValidUntil (%v after the cut) is after the waiter's grant (%v)", valid, granted)
	}
	if gw.Fence <= gh.Fence {
		t.Errorf("fences %d then %d, want growing", gh.Fence, gw.Fence)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// TestEtcdLock_V3Lock: the server's Lock RPC grants and releases, a waiter
// cut short by its deadline gets an indeterminate error and leaves no key,
// and the next grant's fence is higher.
func TestEtcdLock_V3Lock(t *testing.T) {
	c := testetcd.Start(t, 3)
	eps := c.EtcdEndpoints()
	cli := newClient(t, eps[2])
	a := etcdlock.New(newClient(t, eps[0]), "lk", &etcdlock.Options{TTL: ttl, Mode: etcdlock.ModeV3Lock})
	b := etcdlock.New(newClient(t, eps[1]), "lk", &etcdlock.Options{TTL: ttl, Mode: etcdlock.ModeV3Lock})
	ctx := lockCtx(t, 10*time.Second)
	ga, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, etcdlock.ErrNoTryLock) {
		t.Errorf("TryLock in v3lock mode: %v, want ErrNoTryLock", err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = b.Lock(short)
	cancel()
	var oe *lockcore.OpError
	if !errors.As(err, &oe) || !oe.Indeterminate {
		t.Fatalf("Lock past its deadline: %v, want an indeterminate OpError", err)
	}
	eventually(t, 2*time.Second, func() error {
		if n := keys(t, cli, "lk"); n != 1 {
			return fmt.Errorf("%d keys under the lock, want the holder's only", n)
		}
		return nil
	})
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	gb, err := b.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gb.Fence <= ga.Fence {
		t.Errorf("fences %d then %d, want growing", ga.Fence, gb.Fence)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEtcdLock_WaiterLeaseExpiry is etcd-io/etcd#11456: a waiter's lease
// expires while it waits, a later client queues behind the holder, and the
// holder releases. The fixed Mutex refuses the expired waiter
// (ErrSessionExpired); 3.4's server Lock RPC grants it a lock whose key is
// gone, while the later client holds the lock too, and so does the v3.6
// client's RWMutex recipe (etcd-io/etcd#16221).
func TestEtcdLock_WaiterLeaseExpiry(t *testing.T) {
	c := testetcd.Start(t, 3)
	for _, mode := range []etcdlock.Mode{etcdlock.ModeMutex, etcdlock.ModeV3Lock, etcdlock.ModeRWMutex} {
		t.Run(string(mode), func(t *testing.T) { waiterLeaseExpiry(t, c, mode) })
	}
}

func waiterLeaseExpiry(t *testing.T, c *cluster.Cluster, mode etcdlock.Mode) {
	eps := c.EtcdEndpoints()
	key := "lk-" + string(mode)
	obs := newClient(t, eps...)
	h := etcdlock.New(newClient(t, eps[0]), key, &etcdlock.Options{TTL: ttl})
	w := etcdlock.New(newClient(t, eps[1]), key, &etcdlock.Options{TTL: ttl, Mode: mode})
	late := etcdlock.New(newClient(t, eps[2]), key, &etcdlock.Options{TTL: ttl})
	ctx := lockCtx(t, 30*time.Second)
	if _, err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   *etcdlock.Grant
		err error
	}
	wDone, lateDone := make(chan result, 1), make(chan result, 1)
	go func() { g, err := w.Lock(ctx); wDone <- result{g, err} }()
	eventually(t, 3*time.Second, func() error {
		if n := keys(t, obs, key); n != 2 {
			return fmt.Errorf("%d keys, want holder and waiter", n)
		}
		return nil
	})
	w.Abandon() // the waiter's keep-alives stop: its lease expires while it waits
	eventually(t, 3*ttl, func() error {
		if n := keys(t, obs, key); n != 1 {
			return fmt.Errorf("%d keys, want the holder's only once the waiter's lease expired", n)
		}
		return nil
	})
	go func() { g, err := late.Lock(ctx); lateDone <- result{g, err} }()
	eventually(t, 3*time.Second, func() error {
		if n := keys(t, obs, key); n != 2 {
			return fmt.Errorf("%d keys, want holder and late client", n)
		}
		return nil
	})
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lr := <-lateDone
	if lr.err != nil {
		t.Fatalf("late client: %v", lr.err)
	}
	wr := <-wDone
	switch mode {
	case etcdlock.ModeMutex:
		if !errors.Is(wr.err, etcdlock.ErrSessionExpired) {
			t.Fatalf("expired waiter: grant %v, error %v; want ErrSessionExpired", wr.g, wr.err)
		}
		t.Logf("fixed Mutex: the expired waiter is refused (%v); the late client holds (fence %d)", wr.err, lr.g.Fence)
	case etcdlock.ModeV3Lock:
		if wr.err != nil {
			t.Fatalf("3.4 Lock RPC refused the expired waiter (%v): etcd-io/etcd#11456 did not reproduce", wr.err)
		}
		resp, err := obs.Get(ctx, wr.g.Key)
		if err != nil {
			t.Fatal(err)
		}
		ttlResp, err := obs.TimeToLive(ctx, clientv3.LeaseID(wr.g.Lease))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != 0 || ttlResp.TTL > 0 {
			t.Fatalf("granted waiter's key count %d, lease TTL %d; want a dead key and lease", resp.Count, ttlResp.TTL)
		}
		t.Logf("3.4 Lock RPC: granted the expired waiter %s (lease TTL %d, key gone, fence %d) while the late client holds %s (fence %d): two holders",
			wr.g.Key, ttlResp.TTL, wr.g.Fence, lr.g.Key, lr.g.Fence)
	case etcdlock.ModeRWMutex:
		if wr.err != nil {
			t.Fatalf("RWMutex recipe refused the expired waiter (%v): etcd-io/etcd#16221 did not reproduce", wr.err)
		}
		if !strings.Contains(wr.g.Key, "key gone") || wr.g.Fence != 0 {
			t.Fatalf("granted waiter's key %q, fence %d; want its key named gone, fence 0", wr.g.Key, wr.g.Fence)
		}
		if _, err := w.TryLock(ctx); !errors.Is(err, etcdlock.ErrNoTryLock) {
			t.Errorf("TryLock in rwmutex mode: %v, want ErrNoTryLock", err)
		}
		t.Logf("RWMutex recipe: granted the expired waiter (%s) while the late client holds %s: two holders", wr.g.Key, lr.g.Key)
		if err := w.Unlock(ctx); err != nil {
			t.Error(err)
		}
	}
	if err := late.Unlock(ctx); err != nil {
		t.Error(err)
	}
}
