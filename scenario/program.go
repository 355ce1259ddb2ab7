package scenario

import (
	"debug/buildinfo"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockpick/lockpick/internal/suggest"
)

// The capabilities a lock program can declare ([Program].Caps, lock.caps
// in a file, `--subject-caps`).
const (
	// CapBlock: it waits for the lock itself, bounded by the wait lockpick
	// gives it; a scenario's acquire: block then runs as a blocking acquire.
	CapBlock = "block"
	// CapRenew: it renews its own lease until released, and tells
	// lockpick each new deadline.
	CapRenew = "renew"
	// CapFence: it hands out fencing tokens.
	CapFence = "fence"
)

// capNames are the capabilities, in the order messages list them.
var capNames = []string{CapBlock, CapRenew, CapFence}

// CapNames returns the capabilities a lock program can declare.
func CapNames() []string { return slices.Clone(capNames) }

// A Program is a lock program put through the scenarios (kind external,
// `--subject-cmd`): its command line, the shape of its lock and what it
// declares it does.
type Program struct {
	// Command is the program and its arguments.
	Command []string
	// Shape is ShapeSingle, ShapeRedlock or ShapeEtcd; "" declares none,
	// and the program is put through every topology.
	Shape string
	// Caps are its capabilities (CapBlock, CapRenew, CapFence). nil
	// declares nothing: fenced scenarios run, and it neither blocks nor
	// renews. Empty declares that it does none of them.
	Caps []string
}

// ParseCaps reads a `--subject-caps` list: capabilities separated by
// commas, or "none" (declared, and empty). It returns an error wrapping
// [ErrBadScenario] for an unknown or repeated one.
func ParseCaps(list string) ([]string, error) {
	caps := []string{}
	if strings.TrimSpace(list) == "none" {
		return caps, nil
	}
	for _, c := range strings.Split(list, ",") {
		caps = append(caps, strings.TrimSpace(c))
	}
	if i, msg := badCap(caps); msg != "" {
		return nil, fmt.Errorf("%w: capability %q: %s, or none", ErrBadScenario, caps[i], msg)
	}
	return caps, nil
}

// badCap finds the first unknown or repeated capability of caps: its
// index and why; "" when every one is known and listed once.
func badCap(caps []string) (int, string) {
	for i, c := range caps {
		switch {
		case !slices.Contains(capNames, c):
			return i, fmt.Sprintf("unknown%s: a lock program declares %s", suggest.Hint(c, capNames), strings.Join(capNames, ", "))
		case slices.Index(caps, c) < i:
			return i, "listed twice"
		}
	}
	return 0, ""
}

// Declares reports whether the lock's program declares capability c.
func (l Lock) Declares(c string) bool { return slices.Contains(l.Caps, c) }

// programTraits are the traits of lock program p: those of kind
// external, with its declared shape, less fenced when it declares caps
// without fence, plus acquire (a blocking acquire) when it declares block,
// and a client clock skew, which lockpick's clock shim gives a program
// whose clock goes through libc (see [Scenario.WithProgram]).
func programTraits(p Program) Traits {
	t, _ := TraitsOf("external")
	honours := slices.DeleteFunc(slices.Clone(t.Honours), func(set string) bool {
		return set == "fenced" && p.Caps != nil && !slices.Contains(p.Caps, CapFence)
	})
	if slices.Contains(p.Caps, CapBlock) {
		honours = append(honours, "acquire")
	}
	return Traits{Shape: p.Shape, Honours: append(honours, "clock_skew")}
}

// ProgramPath returns the absolute path of a lock program named as a
// command line names it (a path, or a command on PATH), so that isolated
// clients, started elsewhere, find it too; an error when it is not found.
func ProgramPath(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// goProgram reports whether command runs a Go binary, which reads the
// clock from the vDSO, out of reach of a clock shim preloaded into libc.
// A script, or a program not found, is not one.
func goProgram(command []string) bool {
	if len(command) == 0 {
		return false
	}
	path, err := exec.LookPath(command[0])
	if err != nil {
		return false
	}
	_, err = buildinfo.ReadFile(path)
	return err == nil
}
