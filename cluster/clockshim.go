package cluster

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
