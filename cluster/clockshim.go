package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

//go:embed clockshim/clockshim.c
var clockShimSource []byte

// clockShimFlags are gcc's flags; the Makefile uses the same ones.
var clockShimFlags = []string{"-shared", "-fPIC", "-O2"}

// ClockShimSource returns the C source of the clock shim.
func ClockShimSource() []byte { return bytes.Clone(clockShimSource) }

// BuildClockShim compiles the clock shim with gcc into dir and returns the
// library's path, for [ProcessBackend.ClockShim]. The file is named by a
// hash of the source and flags, so a second call (or a concurrent one in
// another process) reuses it. It returns [ErrNoCompiler] without gcc, and
// gcc's output with any compile error.
func BuildClockShim(dir string) (string, error) {
	return buildShim(dir, "clockshim", clockShimSource, clockShimFlags, nil)
}

// buildShim compiles the C source src with gcc, flags and then libs into
// dir/name-HASH.so, HASH naming the source and arguments, and returns its
// path. An existing library of that name is reused.
func buildShim(dir, name string, src []byte, flags, libs []string) (string, error) {
	h := sha256.New()
	h.Write(src)
	fmt.Fprint(h, flags, libs)
	out := filepath.Join(dir, name+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".so")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("%w (apt-get install gcc)", ErrNoCompiler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cluster: build %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, name+"-*.so.tmp")
	if err != nil {
		return "", fmt.Errorf("cluster: build %s: %w", name, err)
	}
	_ = tmp.Close()
	defer os.Remove(tmp.Name())
	args := append(append([]string{}, flags...), "-o", tmp.Name(), "-x", "c", "-")
	args = append(args, libs...)
	cmd := exec.Command(gcc, args...)
	cmd.Stdin = bytes.NewReader(src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cluster: build %s: %w\n%s", name, err, msg)
	}
	// rename is atomic, so a concurrent builder never sees half a library.
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("cluster: build %s: %w", name, err)
	}
	return out, nil
}

// clockEnv returns env with the clock shim preloaded and pointed at c's
// file: a later LD_PRELOAD or LOCKPICK_CLOCK_FILE wins in os/exec.
func clockEnv(env []string, shim string, c *Clock) []string {
	return append(append([]string{}, env...), "LD_PRELOAD="+shim, "LOCKPICK_CLOCK_FILE="+c.path)
}

// checkClockMapped returns an error wrapping [ErrNoClockShim] unless
// process pid, node name's program bin started with shim preloaded, has
// mapped c's file within a second. The shim maps it on the first clock
// read, which Redis, a JVM and PostgreSQL's postmaster make before they
// answer (a log line's time), so the first look normally settles it; a
// process forked after that (a PostgreSQL backend) inherits the shared
// mapping. A memory map that cannot be read is an error too: clock faults
// on an unchecked node could do nothing unnoticed.
func checkClockMapped(ctx context.Context, pid int, c *Clock, name, shim, bin string) error {
	want := [][]byte{[]byte(c.path)}
	if real, err := filepath.EvalSymlinks(c.path); err == nil && real != c.path {
		want = append(want, []byte(real)) // /proc shows resolved paths
	}
	maps := "/proc/" + strconv.Itoa(pid) + "/maps"
	deadline := time.Now().Add(time.Second)
	for {
		b, err := os.ReadFile(maps)
		if err != nil {
			return fmt.Errorf("%w: cannot check that %s loaded %s: %v", ErrNoClockShim, name, shim, err)
		}
		for _, w := range want {
			if bytes.Contains(b, w) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s (pid %d) did not map its clock file %s within 1s: %s does not move its clock (not the clock shim, or a static %s)",
				ErrNoClockShim, name, pid, c.path, shim, bin)
		}
		if err := SleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}
