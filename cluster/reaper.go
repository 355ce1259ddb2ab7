package cluster

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// reaper tracks every running Redis process so a signal can stop them all.
var reaper = &liveSet[*process]{}

// A liveSet tracks the running processes of one kind (Redis processes,
// etcd members, PostgreSQL nodes, ZooKeeper members), so [KillAll]
// (Ctrl-C, SIGTERM) stops them all.
type liveSet[T interface {
	comparable
	Kill() error
}] struct {
	mu  sync.Mutex
	set map[T]struct{}
}

func (s *liveSet[T]) add(m T) {
	s.mu.Lock()
	if s.set == nil {
		s.set = map[T]struct{}{}
	}
	s.set[m] = struct{}{}
	s.mu.Unlock()
}

func (s *liveSet[T]) remove(m T) {
	s.mu.Lock()
	delete(s.set, m)
	s.mu.Unlock()
}

func (s *liveSet[T]) killAll() {
	s.mu.Lock()
	ms := make([]T, 0, len(s.set))
	for m := range s.set {
		ms = append(ms, m)
	}
	s.mu.Unlock()
	for _, m := range ms {
		_ = m.Kill()
	}
}

// reapHooks stop what backends other than the process backend started
// (package dockerbackend registers one that removes this process's containers);
// they are appended only from init functions.
var reapHooks []func()

// OnReap makes [KillAll] call h too, to stop what another backend started.
// Call it only from an init function.
func OnReap(h func()) { reapHooks = append(reapHooks, h) }

// KillAll kills every process any backend in this program started and not
// yet stopped, removes every container it started and not yet removed,
// and then unmounts every lazy disk. It is safe to call from a signal
// handler goroutine.
func KillAll() {
	reaper.killAll()
	for _, h := range reapHooks {
		h()
	}
	disks.closeAll() // last: the nodes using them are gone
}

// ReapOnSignal kills every started process when SIGINT or SIGTERM arrives,
// then calls onSignal (which usually exits). The returned func stops listening.
func ReapOnSignal(onSignal func(os.Signal)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			KillAll()
			if onSignal != nil {
				onSignal(sig)
			}
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
