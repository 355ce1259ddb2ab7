package results_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockpick/lockpick/results"
)

// TestReport_RendersInChromium loads report.html in headless Chromium and
// checks the rendered DOM still has the timeline. It skips without Chromium.
func TestReport_RendersInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium to run this test)")
	}
	h, r := doubleGrant(t)
	v := &results.Verdict{Scenario: "x", Expect: "unsafe", Observed: "unsafe", Matched: true, Trials: 1}
	path := filepath.Join(t.TempDir(), "report.html")
	rep := &results.Report{Verdict: v, Trial: 1, Timeline: results.NewTimeline(h, r), Check: r}
	if err := rep.WriteHTMLFile(path); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu",
		"--disable-dev-shm-usage", "--dump-dom", "file://"+path).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	if !strings.Contains(dom, `class="timeline"`) || strings.Count(dom, `class="lease"`) < 2 || !strings.Contains(dom, `class="overlap"`) {
		t.Fatalf("rendered page lacks the timeline:\n%.2000s", dom)
	}
}
