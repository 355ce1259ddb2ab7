package subject_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockpick/lockpick/internal/testetcd"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// etcdSubject builds client p's subject of kind on the members of view,
// closed at cleanup.
func etcdSubject(tb testing.TB, view subject.View, kind string, fenced bool, p int) subject.Subject {
	tb.Helper()
	lock := scenario.Lock{Kind: kind, Key: "lock", TTL: scenario.Duration(2 * time.Second)}
	if kind == "etcd-v3lock" {
		lock.Acquire = scenario.AcquireBlock
	}
	tgt := subject.NewTarget(view)
	s := subject.New(subject.Config{Lock: lock, Fenced: fenced, Process: p, Target: tgt})
	tb.Cleanup(func() { subject.Close(s); tgt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.(subject.Warmer).WarmUp(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestEtcdSubject_Mutex(t *testing.T) {
	c := testetcd.Start(t, 3)
	view := subject.ViewOf(c)
	if got, want := len(view.Etcd), 3; got != want {
		t.Fatalf("view has %d etcd members, want %d", got, want)
	}
	a := etcdSubject(t, view, "etcd-mutex", true, 1)
	b := etcdSubject(t, view, "etcd-mutex", true, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t0 := time.Now()
	g1, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(view.Etcd, func(n subject.NodeAddr) bool { return n.Name == g1.Node }) {
		t.Errorf("grant node %q is no member of %v", g1.Node, view.Etcd)
	}
	if d := g1.ValidUntil.Sub(t0); d < time.Second || d > 2100*time.Millisecond {
		t.Errorf("ValidUntil is %v after the acquire began, want about the 2s TTL", d)
	}
	if g1.Fence <= 0 || g1.Lost == nil || g1.Token == "" {
		t.Errorf("grant %+v: want a fence, a token and a Lost channel", g1)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Errorf("second client's acquire: err = %v, want ErrNotAcquired", err)
	}
	if _, err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g1.Lost:
	case <-time.After(time.Second):
		t.Error("Lost not closed after the release")
	}
	g2, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g2.Fence <= g1.Fence {
		t.Errorf("fences %d then %d, want growing", g1.Fence, g2.Fence)
	}
	if _, err := a.Release(ctx); !errors.Is(err, lockcore.ErrReleased) {
		t.Errorf("release without a grant: err = %v, want ErrReleased", err)
	}
}

func TestEtcdSubject_UnfencedV3Lock(t *testing.T) {
	c := testetcd.Start(t, 3)
	s := etcdSubject(t, subject.ViewOf(c), "etcd-v3lock", false, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.Fence != 0 {
		t.Errorf("unfenced grant has fence %d", g.Fence)
	}
	if _, err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
