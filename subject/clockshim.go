package subject

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockpick/lockpick/cluster"
)

// A lock program whose client's clock the scenario skews (lock.clock_skew)
// runs with lockpick's clock shim preloaded (LD_PRELOAD), as redis-server
// does under the clock faults: the shim answers libc's clock_gettime,
// gettimeofday and time from a clock file ([cluster.Clock]), which starts
// at the client's skew. The skew is a wall-clock jump: CLOCK_MONOTONIC is
// left alone (the shim never steps it), so a renewing program's at_mono_ns
// stays on the host's clock, the history's. A program that reads the
// clock past libc (a Go program reads the vDSO; a static binary has no
// libc to preload into) keeps the true time: WarmUp looks for the shim in
// the memory map of each of the program's processes, and Health names
// those without it.

// Clock shim environment variables, as cluster's process backend sets them.
const (
	preloadEnv   = "LD_PRELOAD"
	clockFileEnv = "LOCKPICK_CLOCK_FILE"
)

// skewClock builds the clock shim, writes a clock file ahead of the true
// time by skew (behind, if negative), and returns env with the variables
// that preload the shim on it. Errors are the shim's build errors
// (wrapping [cluster.ErrNoCompiler] without gcc) and file errors.
func (s *externalSubject) skewClock(env []string, skew time.Duration) ([]string, error) {
	dir := s.cfg.ClockShimDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "lockpick-cache")
	}
	shim, err := cluster.BuildClockShim(dir)
	if err != nil {
		return nil, err
	}
	clockDir, err := os.MkdirTemp("", "lockpick-clock-")
	if err != nil {
		return nil, err
	}
	clock, err := cluster.NewClock(filepath.Join(clockDir, "clock"))
	if err == nil {
		err = clock.Jump(skew)
	}
	if err != nil {
		_ = os.RemoveAll(clockDir)
		return nil, err
	}
	s.shim, s.clockDir = shim, clockDir
	preload := shim
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, preloadEnv+"="):
			if old := strings.TrimPrefix(kv, preloadEnv+"="); old != "" {
				preload += ":" + old
			}
		case strings.HasPrefix(kv, clockFileEnv+"="):
		default:
			out = append(out, kv)
		}
	}
	return append(out, preloadEnv+"="+preload, clockFileEnv+"="+clock.Path()), nil
}

// checkShim notes, once the program answered its warm-up, which of its
// processes do not map the clock shim it was started with.
func (s *externalSubject) checkShim() {
	if s.shim == "" {
		return
	}
	s.unshimmed = nil
	for _, pid := range groupPIDs(s.cmd.Process.Pid) {
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		if err != nil || bytes.Contains(maps, []byte(s.shim)) {
			continue // gone since, or shimmed
		}
		s.unshimmed = append(s.unshimmed, fmt.Sprintf("%d (%s)", pid, comm(pid)))
	}
}

// groupPIDs lists the live processes of process group pgid.
func groupPIDs(pgid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 2 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// comm returns the command name of process pid, or "?".
func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
