package cluster

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// reaper tracks every running process so a signal can stop them all.
var reaper = &procSet{procs: map[*process]struct{}{}}

type procSet struct {
	mu    sync.Mutex
	procs map[*process]struct{}
}

func (s *procSet) add(p *process) {
	s.mu.Lock()
	s.procs[p] = struct{}{}
	s.mu.Unlock()
}

func (s *procSet) remove(p *process) {
	s.mu.Lock()
	delete(s.procs, p)
	s.mu.Unlock()
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
	reaper.mu.Lock()
	procs := make([]*process, 0, len(reaper.procs))
	for p := range reaper.procs {
		procs = append(procs, p)
	}
	reaper.mu.Unlock()
	for _, p := range procs {
		_ = p.Kill()
	}
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
