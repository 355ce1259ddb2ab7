package subject_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockpick/lockpick/internal/testpg"
	"github.com/lockpick/lockpick/lockcore"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// pgSubject builds client p's pg-advisory subject on view, closed at cleanup.
func pgSubject(tb testing.TB, view subject.View, fenced bool, p int) subject.Subject {
	tb.Helper()
	return warmSubject(tb, view, scenario.Lock{Kind: "pg-advisory", Key: "lock"}, fenced, p)
}

// TestPgSubject_Advisory: one session holds the lock and the other is
// refused; after the release the other is granted with a larger fence; a
// second release says the lock is not held.
func TestPgSubject_Advisory(t *testing.T) {
	c := testpg.Start(t, 1, false)
	view := subject.ViewOf(c)
	a, b := pgSubject(t, view, true, 1), pgSubject(t, view, true, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g1, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g1.Node != "p1" || g1.Fence <= 0 || time.Until(g1.ValidUntil) < 30*time.Minute {
		t.Errorf("grant %+v: want p1, a fence and no near deadline", g1)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, lockcore.ErrNotAcquired) {
		t.Fatalf("second session's acquire = %v, want ErrNotAcquired", err)
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
	if _, err := a.Release(ctx); !errors.Is(err, lockcore.ErrNotHeld) {
		t.Errorf("release without the lock = %v, want ErrNotHeld", err)
	}
}
