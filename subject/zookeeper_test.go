package subject_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockpick/lockpick/internal/testzk"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// zkSubject builds client p's zk-lock subject on view (1 s sessions),
// warmed up and closed at cleanup.
func zkSubject(tb testing.TB, view subject.View, fenced bool, p int) subject.Subject {
	tb.Helper()
	lock := scenario.Lock{Kind: "zk-lock", Key: "lock", Acquire: scenario.AcquireBlock, TTL: scenario.Duration(time.Second)}
	return warmSubject(tb, view, lock, fenced, p)
}

// warmSubject builds client p's subject of lock on view, warms it up
// (within 10s) and closes it at cleanup.
func warmSubject(tb testing.TB, view subject.View, lock scenario.Lock, fenced bool, p int) subject.Subject {
	tb.Helper()
	tgt := subject.NewTarget(view)
	s := subject.New(subject.Config{Lock: lock, Fenced: fenced, Process: p, Target: tgt})
	tb.Cleanup(func() { subject.Close(s); tgt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.(subject.Warmer).WarmUp(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestZkSubject_Lock: one session holds the lock and the other waits
// (until its context ends); after the release the other is granted with a
// larger fence and a deadline a session timeout away; a holder whose
// session loses its member past its timeout is told (Lost), and its
// release does not succeed.
func TestZkSubject_Lock(t *testing.T) {
	c := testzk.Start(t, 1, false)
	view := subject.ViewOf(c)
	a, b := zkSubject(t, view, true, 1), zkSubject(t, view, true, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g1, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g1.Node != "z1" || g1.Fence <= 0 || g1.Token == "" || time.Until(g1.ValidUntil) > time.Second {
		t.Errorf("grant %+v: want z1, a token, a fence and a deadline within the 1s session timeout", g1)
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = b.Acquire(wctx)
	wcancel()
	var oe *lockcore.OpError
	if !errors.As(err, &oe) || oe.Indeterminate {
		t.Fatalf("second session's acquire while held = %v, want a certain failure when its context ends", err)
	}
	if _, err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g2, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g2.Fence <= g1.Fence {
		t.Errorf("fence %d after %d, want larger", g2.Fence, g1.Fence)
	}
	// b's session loses its member for longer than its timeout.
	if err := c.ZooKeeper[0].Link.Cut(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g2.Lost:
	case <-time.After(5 * time.Second):
		t.Fatal("holder cut off for 5s and not told")
	}
	time.Sleep(1500 * time.Millisecond)
	if err := c.ZooKeeper[0].Link.Restore(); err != nil {
		t.Fatal(err)
	}
	// Not held, or unknown if the client has not reconnected yet; never ok.
	_, err = b.Release(ctx)
	if !errors.Is(err, lockcore.ErrNotHeld) && (!errors.As(err, &oe) || !oe.Indeterminate) {
		t.Errorf("release after the session expired = %v, want ErrNotHeld or an unknown outcome", err)
	}
}
