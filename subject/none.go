package subject

import (
	"context"
	"fmt"

	"github.com/lockpick/lockpick/scenario"
)

// The "none" lock grants every request at once, without asking Redis: the
// control that shows what a lock is for. Its clients overlap, and the
// checker must see their lost updates.
func init() {
	Register("none", scenario.Traits{}, func(c Config) Subject { return &noLock{c: c} })
}

type noLock struct {
	c Config
	n int
}

func (s *noLock) Acquire(context.Context) (Grant, error) {
	s.n++
	return Grant{Token: fmt.Sprintf("none-%d-%d", s.c.Process, s.n), ValidUntil: s.c.Clock().Now().Add(s.c.Lock.TTL.D())}, nil
}

func (s *noLock) Release(context.Context) (string, error) { return "", nil }
