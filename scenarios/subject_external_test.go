package scenarios_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockpick/lockpick/internal/testredis"
)

// buildExtlock builds examples/extlock, a lock in a program of its own, and
// returns the command that runs it.
func buildExtlock(tb testing.TB) []string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "extlock")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/lockpick/lockpick/examples/extlock").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build examples/extlock: %v\n%s", err, out)
	}
	return []string{bin}
}

func TestExternal_SingleBaseline(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	wantSafe(t, runWith(t, "single-baseline", "external", buildExtlock(t), nil), 10)
}

func TestExternal_FailoverLockLoss(t *testing.T) {
	testredis.Require(t, true)
	t.Parallel()
	wantFailoverDoubleGrant(t, runWith(t, "failover-lock-loss", "external", buildExtlock(t), nil))
}
