package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/lazyfs"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

type runFlags struct {
	trials   int
	seed     uint64
	out      string
	quiet    bool
	files    []string
	parallel int
	junit    string
	backend  string
	image    string
	suite    string
	summary  string
	subject  string
	subjCmd  string
	shape    string // --subject-shape
	caps     string // --subject-caps
	baseline string
	update   string
	shard    shardFlags
	soak     time.Duration
	every    time.Duration
	stopOnA  bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [SCENARIO...] [--suite NAME] [--file FILE]",
		Short: "Run scenarios for N trials and write a run folder per scenario",
		Long: `Run plays each named scenario for --trials trials against real Redis nodes
started on free loopback ports, checks every trial's history, prints the
verdict and writes results/runs/<run>/ (scenario.json, history.jsonl,
verdict.json, trial-NNN/history.jsonl, trial-NNN/nodes/*.log).

Trial i (from 1) uses seed --seed+i-1; run a single trial again with its seed to replay it.
A scenario can also come from a YAML file (--file); see scenario/catalogue/
for the format: every built-in scenario is written that way.`,
		Example: "  lockpick run failover-lock-loss --trials 10\n  lockpick run --suite quick --junit junit.xml\n  lockpick run single-baseline --seed 42\n  lockpick run --file my-scenario.yaml",
		Args: func(_ *cobra.Command, args []string) error {
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenarios(cmd.Context(), cmd.OutOrStdout(), args, f)
		},
	}
	addTrialFlags(cmd, &f)
	cmd.Flags().StringArrayVarP(&f.files, "file", "f", nil, "run the scenario in this YAML file (repeatable)")
	cmd.Flags().StringVar(&f.suite, "suite", "", "run a suite: default (every scenario), quick or ci")
	cmd.Flags().StringVar(&f.summary, "summary", "", "also write a Markdown table of the verdicts to this file")
	cmd.Flags().StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file, for CI systems")
	addSubjectFlags(cmd, &f.subject, &f.subjCmd, &f.shape, &f.caps, "the scenarios instead of their own: redislock, redsync, set-nx, redlock, ...")
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "with a subject: compare with this baseline and fail only on a change for the worse (docs/verdicts.md)")
	cmd.Flags().StringVar(&f.update, "update-baseline", "", "with a subject: write the run's verdicts to this baseline file")
	cmd.Flags().DurationVar(&f.soak, "soak", 0, "soak: keep one topology up and repeat the scenario's fault schedule for this long, checking as it goes (docs/soak.md)")
	cmd.Flags().DurationVar(&f.every, "every", 0, "with --soak: start a round this often (default: the scenario's duration; a round also waits for its leases to run out and the topology to be put back)")
	cmd.Flags().BoolVar(&f.stopOnA, "stop-on-anomaly", false, "with --soak: stop at the first anomaly the scenario does not tolerate (the verdict is then partial)")
	return cmd
}

func addTrialFlags(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().IntVarP(&f.trials, "trials", "n", 1, "trials per scenario (per arm, for compare)")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "seed of the first trial; trial i uses seed+i-1")
	cmd.Flags().IntVarP(&f.parallel, "parallel", "p", 1, "trials to run at once (each has its own nodes and ports)")
	cmd.Flags().StringVar(&f.out, "out", "results/runs", "folder to create run folders in")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar")
	cmd.Flags().StringVar(&f.backend, "backend", "process", "where Redis runs: process (redis-server on this host) or docker")
	cmd.Flags().StringVar(&f.image, "image", "", "with --backend docker: a Redis image to run instead of the locally built one, e.g. redis:7.2")
	addShardFlags(cmd, &f.shard, "trials of every scenario and arm, e.g. 2/4; merge the shards' folders with lockpick merge")
}

func runScenarios(ctx context.Context, out io.Writer, names []string, f runFlags) error {
	if f.trials < 1 || f.parallel < 1 {
		return usageError("run: --trials and --parallel must be at least 1")
	}
	if len(names)+len(f.files) == 0 && f.suite == "" {
		return usageError("run: name at least one scenario (see `lockpick list`), or pass --suite or --file")
	}
	nb, err := backendFactory(f.backend, f.image)
	if err != nil {
		return usageError("run: " + err.Error())
	}
	shard, err := f.shard.resolve()
	if err != nil {
		return usageError("run: " + err.Error())
	}
	var list []scenario.Scenario
	if f.suite != "" {
		suite, err := scenario.Suite(f.suite)
		if err != nil {
			return usageError(err.Error())
		}
		list = append(list, suite...)
	}
	for _, file := range f.files {
		s, err := scenario.LoadFile(file)
		if err != nil {
			return usageError(err.Error())
		}
		list = append(list, s)
	}
	for _, n := range names {
		s, err := scenario.Lookup(n)
		if err != nil {
			return usageError(err.Error())
		}
		list = append(list, s)
	}
	list, skipped, err := applySubjectSpec(list, subjectSpec{f.subject, f.subjCmd, f.shape, f.caps})
	if err != nil {
		return err
	}
	list, skipped = skipWithoutFUSE(list, skipped, lazyfs.Available())
	if err := backendFits(f.backend, list...); err != nil {
		return usageError("run: " + err.Error())
	}
	subject := subjectOf(f.subject, f.subjCmd)
	if (f.baseline != "" || f.update != "") && (subject == "" || f.soak > 0 || shard.Count > 1) {
		return usageError("run: --baseline and --update-baseline go with --subject or --subject-cmd, and not with --soak or --shard")
	}
	if len(list) == 0 {
		var why []string
		for _, v := range skipped {
			why = append(why, v.Scenario+": "+v.Skipped)
		}
		if f.subject == "" && f.subjCmd == "" {
			return usageError("run: nothing this host can run: " + strings.Join(why, "; "))
		}
		return usageError("run: " + subjectFlag(f.subjCmd) + ": no scenario fits the subject: " + strings.Join(why, "; "))
	}
	var base *judge.Baseline
	var gate func(*results.Verdict)
	if f.baseline != "" {
		b, err := judge.ReadBaseline(f.baseline)
		if err == nil {
			err = b.For(subject)
		}
		if err != nil {
			return usageError("run: --baseline: " + err.Error())
		}
		base, gate = &b, b.Judge
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer cluster.KillAll() // whatever a cancelled trial did not stop itself
	if f.soak > 0 || f.stopOnA || f.every != 0 {
		if f.soak <= 0 || len(list) != 1 || f.trials != 1 || shard.Count > 1 || f.every < 0 {
			return usageError("run: --soak takes one scenario, a positive length, and no --trials, --suite or --shard; --stop-on-anomaly and --every need --soak")
		}
		return runSoak(ctx, out, list[0], nb, f)
	}

	printSkipped(out, skipped)
	printDropped(out, list)
	failed := 0
	var verdicts []*results.Verdict
	var dirs []string
	for _, s := range list {
		bar := newBar(s.Name, f, len(shard.Trials(f.trials)))
		v, dir, err := trial.Run(ctx, s, &trial.Options{Trials: f.trials, Seed: f.seed, Out: f.out,
			Parallel: f.parallel, Backend: nb, Shard: shard, Judge: gate, Progress: func(done, _ int) { _ = bar.Set(done) }})
		_ = bar.Finish()
		switch {
		case ctx.Err() != nil:
			return &exitError{code: 130, err: errors.New("interrupted; every node was stopped and no run folder was kept")}
		case errors.Is(err, scenario.ErrBadScenario):
			return usageError(err.Error())
		case err != nil:
			return infraError(err)
		}
		printVerdict(out, v, dir, subject != "")
		verdicts, dirs = append(verdicts, v), append(dirs, dir)
		if !v.Matched {
			failed++
		}
	}
	if subject != "" {
		return finishSubjectRun(out, f, subject, base, verdicts, dirs, skipped)
	}
	if err := writeReports(f.junit, f.summary, verdicts, dirs, ""); err != nil {
		return err
	}
	if failed > 0 {
		return mismatch("%d of %d scenarios did not match their expectation", failed, len(list))
	}
	return nil
}

// finishSubjectRun judges a run of the user's own lock (see gateSubject),
// writes the reports (skipped scenarios last) and the baseline if asked.
func finishSubjectRun(out io.Writer, f runFlags, subject string, base *judge.Baseline, vs []*results.Verdict, dirs []string, skipped []*results.Verdict) error {
	failed := gateSubject(out, vs, base, f.baseline)
	if err := writeReports(f.junit, f.summary, append(vs, skipped...), dirs, ""); err != nil {
		return err
	}
	if f.update != "" {
		b, unproven := judge.NewBaseline(subject, vs)
		if err := b.WriteFile(f.update); err != nil {
			return infraError(fmt.Errorf("run: --update-baseline: %w", err))
		}
		fmt.Fprintf(out, "baseline written: %s\n", f.update)
		if len(unproven) > 0 {
			fmt.Fprintf(out, "baseline: not recorded, inconclusive (it proves nothing; a later run must be no worse than safe there): %s\n",
				strings.Join(unproven, ", "))
		}
	}
	switch {
	case failed > 0 && base != nil:
		return mismatch("%d of %d scenarios are inconclusive or worse than the baseline", failed, len(vs))
	case failed > 0:
		return mismatch("%d of %d scenarios are inconclusive: they prove nothing about %s", failed, len(vs), subject)
	}
	return nil
}

func newBar(name string, f runFlags, total int) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetVisibility(!f.quiet && isTerminal(os.Stderr)),
		progressbar.OptionSetDescription(name),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printVerdict prints a run's verdict; with subject, the verdict of the
// user's own lock, which no expectation of the scenario's judges.
func printVerdict(w io.Writer, v *results.Verdict, dir string, subject bool) {
	head := fmt.Sprintf("expect %s, observed %s — MATCHED", v.Expect, v.Observed)
	switch {
	case subject:
		head = "observed " + v.Observed
	case !v.Matched:
		head = fmt.Sprintf("expect %s, observed %s — NOT MATCHED", v.Expect, v.Observed)
	}
	shard := ""
	if v.Shard != "" {
		shard = ", shard " + v.Shard
	}
	unit, each := v.Unit(), fmt.Sprintf(", %.2f s per trial", v.WallSecondsPerTrial)
	if v.Soak != nil {
		each = fmt.Sprintf(", one every %.0f s", v.Soak.EverySeconds)
	}
	fmt.Fprintf(w, "%s: %s (%s%s%s)\n", v.Scenario, head, v.Tally(unit), each, shard)
	if v.Gate != "" {
		fmt.Fprintf(w, "  %s\n", wrap(v.Gate, 96, "    "))
	}
	for _, t := range v.TrialResults {
		if t.Reason != "" {
			fmt.Fprintf(w, "  %s %d inconclusive: %s\n", unit, t.Trial, wrap(t.Reason, 96, "    "))
		}
	}
	for _, e := range v.ExampleLines() {
		fmt.Fprintf(w, "  %s\n", wrap(e, 96, "    "))
	}
	fmt.Fprintf(w, "  results: %s\n", dir)
	if report := filepath.Join(dir, "report.html"); fileExists(report) {
		fmt.Fprintf(w, "  report:  %s\n", report)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeReports writes the JUnit file and the Markdown summary of verdicts
// (with their run folders) when asked for; extra is appended to the summary.
func writeReports(junit, summary string, vs []*results.Verdict, dirs []string, extra string) error {
	if junit != "" {
		var buf bytes.Buffer
		if err := results.WriteJUnit(&buf, vs, dirs); err != nil {
			return err
		}
		if err := os.WriteFile(junit, buf.Bytes(), 0o644); err != nil {
			return infraError(err)
		}
	}
	if summary != "" {
		var buf bytes.Buffer
		if err := results.WriteSummary(&buf, vs); err != nil {
			return err
		}
		buf.WriteString(extra)
		if err := os.WriteFile(summary, buf.Bytes(), 0o644); err != nil {
			return infraError(err)
		}
	}
	return nil
}

// runSoak runs s as a soak (docs/soak.md): anomalies go to stderr as they
// are found, progress too unless --quiet, and the verdict to out.
func runSoak(ctx context.Context, out io.Writer, s scenario.Scenario, nb trial.BackendFactory, f runFlags) error {
	show := !f.quiet && isTerminal(os.Stderr)
	opt := trial.SoakOptions{For: f.soak, Every: f.every, Seed: f.seed, Out: f.out, Backend: nb, StopOnAnomaly: f.stopOnA,
		Anomaly: func(a trial.SoakAnomaly) {
			if show {
				fmt.Fprint(os.Stderr, "\r\033[K")
			}
			fmt.Fprintf(os.Stderr, "soak %s: round %d, +%.1fs: %s: %s\n", s.Name, a.Round, a.Found.Seconds(),
				a.Anomaly.Kind, wrap(a.Anomaly.Message, 96, "    "))
		}}
	if show {
		opt.Progress = func(p trial.SoakProgress) {
			fmt.Fprintf(os.Stderr, "\r\033[K%s: %s/%s, round %d/%d, %.0f events/s, %d anomalies, peak RSS %d MB",
				s.Name, p.Elapsed.Truncate(time.Second), p.Total, p.Round, p.Rounds, p.EventsPerSec, p.Anomalies, p.PeakRSS>>20)
		}
	}
	v, dir, err := trial.Soak(ctx, s, opt)
	if show {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	switch {
	case errors.Is(err, scenario.ErrBadScenario):
		return usageError(err.Error())
	case err != nil:
		return infraError(err)
	}
	subject := subjectOf(f.subject, f.subjCmd) != ""
	printVerdict(out, v, dir, subject)
	sk := v.Soak
	partial := ""
	if sk.Partial {
		partial = ", partial: " + sk.Stopped
	}
	fmt.Fprintf(out, "  soak: %d rounds (the topology put back between them %s), %d events in %.0f s, peak RSS %d MB%s\n",
		sk.Rounds, times(sk.Restored), sk.Events, sk.WallSeconds, sk.PeakRSSBytes>>20, partial)
	if len(sk.Memory) > 0 {
		var marks []string
		for _, m := range sk.Memory {
			marks = append(marks, fmt.Sprintf("+%.0fs %d MB", m.AtSeconds, m.RSSBytes>>20))
		}
		fmt.Fprintf(out, "  memory (RSS): %s\n", strings.Join(marks, ", "))
	}
	printCheckNote(out, sk)
	if sk.FirstAnomaly > 0 {
		fmt.Fprintf(out, "  first anomaly: round %d", sk.FirstAnomaly)
		if sk.Window != "" {
			fmt.Fprintf(out, "; reproduce it: lockpick check %s", filepath.Join(dir, sk.Window))
		}
		fmt.Fprintln(out)
	}
	if sk.Stopped == "interrupted" {
		return &exitError{code: 130, err: errors.New("interrupted; every fault was healed and the partial verdict was kept in " + dir)}
	}
	switch {
	case subject && !v.Matched:
		return mismatch("%s is inconclusive: it proves nothing about the lock under test", s.Name)
	case !v.Matched:
		return mismatch("%s did not match its expectation", s.Name)
	}
	return nil
}

// times returns "never", "once" or "n times".
func times(n int) string {
	switch n {
	case 0:
		return "never"
	case 1:
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
