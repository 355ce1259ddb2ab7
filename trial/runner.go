package trial

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// Options configures [Run]. Zero fields take their defaults.
type Options struct {
	// Trials is the number of trials. default: 1.
	Trials int
	// Seed is the first trial's seed; trial i uses Seed+i. default: 1.
	Seed uint64
	// Out is the folder run folders are created in. default: results/runs.
	Out string
	// Parallel is how many trials run at once; each has its own nodes and
	// ports. default: 1.
	Parallel int
	// Name is the run folder's name. default: <time>-<scenario>-seed<seed>.
	Name string
	// Backend makes each trial's backend. default: [ProcessBackend].
	Backend BackendFactory
	// Progress, if set, is called after each trial with the number done.
	Progress func(done, total int)
	// Shard, if set, runs only that shard's trials (trial numbers and seeds
	// stay those of the whole run) and writes a shard.json manifest, for
	// `lockpick merge`. default: the whole run.
	Shard results.Shard
	// Judge, if set, judges the verdict again before the run folder is
	// written: it may change Expect and Matched (a run of the user's own
	// lock judged by its baseline).
	Judge func(*results.Verdict)

	// Arm is the compare arm being run, written into the shard manifest;
	// "" outside a comparison.
	Arm string
}

// CheckShard reports a shard that is not one of the run's, or that would
// hold no trial.
func (o Options) CheckShard() error {
	err := o.Shard.Validate()
	if err == nil {
		err = o.Shard.Fits(o.Trials)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", scenario.ErrBadScenario, err)
	}
	return nil
}

// WithDefaults returns a copy of o (nil: the zero Options) with its
// defaults filled in.
func (o *Options) WithDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Trials <= 0 {
		c.Trials = 1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Backend == nil {
		c.Backend = ProcessBackend
	}
	if c.Parallel <= 0 {
		c.Parallel = 1
	}
	if c.Out == "" {
		c.Out = filepath.Join("results", "runs")
	}
	return c
}

// A TrialResult is what one trial recorded and what the checker made of it.
type TrialResult struct {
	Seed    uint64
	History checker.History
	Check   checker.Result
	// Evidence is what the trial proves: grants, faults fired with their
	// effect, the scenario's requirements.
	Evidence evidence.Evidence
	// Observed is safe, unsafe, stuck, starves or inconclusive; Reason says why an
	// inconclusive trial proves nothing.
	Observed string
	Reason   string
	Wall     time.Duration
	// FirstViolation is when, from the trial's start, the first anomaly
	// that counts against the lock happened; 0 unless Observed is a
	// violation.
	FirstViolation time.Duration

	checkOptions *checker.Options
}

// readyTimeout bounds how long an isolated client may take to be ready,
// its lock's warm-up included.
func readyTimeout() time.Duration { return subject.WarmUpLimit() + 10*time.Second }

// CheckTimeout bounds each linearizability search; past it the verdict is unknown.
const CheckTimeout = 30 * time.Second

// Run plays s for opt.Trials trials and writes a run folder. It returns the
// verdict and the folder's path. Harness failures come back as *[InfraError]
// and leave no run folder behind.
func Run(ctx context.Context, s scenario.Scenario, opt *Options) (*results.Verdict, string, error) {
	o := opt.WithDefaults()
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, "", err
	}
	if err := o.CheckShard(); err != nil {
		return nil, "", err
	}
	return intoFolder(o, FolderName("", s.Name, o.Seed, o.Shard.Suffix()), func(dir *results.RunDir) (*results.Verdict, error) {
		return runTrials(ctx, s, o, dir)
	})
}

// intoFolder creates the run folder (o.Name, or a fresh one from name),
// lets fill write it, and commits it; a failure leaves no folder behind.
func intoFolder(o Options, name string, fill func(*results.RunDir) (*results.Verdict, error)) (*results.Verdict, string, error) {
	var dir *results.RunDir
	var err error
	if o.Name != "" {
		dir, err = results.Create(o.Out, o.Name)
	} else {
		dir, err = CreateFolder(o.Out, name)
	}
	if err != nil {
		return nil, "", &InfraError{Err: err}
	}
	v, err := fill(dir)
	if err != nil {
		dir.Abort()
		return nil, "", err
	}
	final, err := dir.Commit()
	if err != nil {
		dir.Abort()
		return nil, "", &InfraError{Err: err}
	}
	return v, final, nil
}

func runTrials(ctx context.Context, s scenario.Scenario, o Options, dir *results.RunDir) (*results.Verdict, error) {
	if err := dir.WriteJSON("scenario.json", s); err != nil {
		return nil, &InfraError{Err: err}
	}
	played, err := playTrials(ctx, s, o, dir)
	if err != nil {
		return nil, err
	}
	trials := make([]results.Trial, len(played))
	checks := make([]checker.Result, len(played))
	for i, p := range played {
		tr := p.TrialResult
		trials[i] = results.Trial{Trial: p.number, Seed: tr.Seed, Observed: tr.Observed, Reason: tr.Reason,
			WallSeconds: tr.Wall.Seconds(), Dir: trialDir(p.number), Evidence: tr.Evidence,
			FirstViolationSeconds: tr.FirstViolation.Seconds()}
		checks[i] = tr.Check
	}
	v := judge.Run(s.Name, s.Rules(), o.Seed, trials, checks)
	if !o.Shard.Whole() {
		v.Shard = o.Shard.String()
	}
	if o.Judge != nil {
		o.Judge(v)
	}
	shown := ShownTrial(trials)
	if err := FinishRun(dir, s, v, played[shown].TrialResult, shown); err != nil {
		return nil, &InfraError{Err: err}
	}
	if !o.Shard.Whole() {
		if err := writeManifest(dir, s.Name, o.Arm, o, trials); err != nil {
			return nil, &InfraError{Err: err}
		}
	}
	return v, nil
}

// ShownTrial is the position of the trial a run's report shows: the first
// that is not plainly safe, else the first.
func ShownTrial(trials []results.Trial) int {
	for i, t := range trials {
		if t.Observed != string(scenario.Safe) {
			return i
		}
	}
	return 0
}

// FinishRun writes a run folder's verdict.json, its top-level history (the
// shown trial's) and its report.
func FinishRun(dir *results.RunDir, s scenario.Scenario, v *results.Verdict, shown TrialResult, i int) error {
	if err := checker.WriteFile(dir.Path(checker.HistoryFile), shown.History); err != nil {
		return err
	}
	if err := dir.WriteJSON("verdict.json", v); err != nil {
		return err
	}
	return WriteReport(dir, s, v, shown, v.TrialResults[i])
}

// trialDir is the folder of trial number t (1-based) inside a run folder.
func trialDir(t int) string { return fmt.Sprintf("trial-%03d", t) }

// A playedTrial is a trial's result with its trial number (1-based).
type playedTrial struct {
	number int
	TrialResult
}

// playTrials runs the trials of o.Shard, o.Parallel at a time, writing each
// trial's files as it ends, and returns them in trial order.
func playTrials(ctx context.Context, s scenario.Scenario, o Options, dir *results.RunDir) ([]playedTrial, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	numbers := o.Shard.Trials(o.Trials)
	played := make([]playedTrial, len(numbers))
	errs := make([]error, len(numbers))
	sem := make(chan struct{}, o.Parallel)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for i, t := range numbers {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			rel := trialDir(t)
			tr, err := RunTrial(ctx, s, o.Seed+uint64(t-1), dir.Path(rel), o.Backend)
			if err == nil {
				if werr := writeTrial(dir, rel, tr); werr != nil {
					err = &InfraError{Err: werr}
				}
			}
			if err != nil {
				errs[i] = err
				cancel() // one broken trial ends the run
				return
			}
			played[i] = playedTrial{t, tr}
			mu.Lock()
			done++
			if o.Progress != nil {
				o.Progress(done, len(numbers))
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return played, nil
}

func writeTrial(dir *results.RunDir, rel string, tr TrialResult) error {
	if err := checker.WriteFile(dir.Path(filepath.Join(rel, "history.jsonl")), tr.History); err != nil {
		return err
	}
	if tr.Check.Verdict != checker.Ok {
		// porcupine's own view of the history, with the nemesis events as notes.
		path := dir.Path(filepath.Join(rel, "linearizability.html"))
		if _, err := checker.VisualizePath(tr.History, tr.checkOptions, CheckTimeout, path); err != nil {
			return err
		}
	}
	return dir.WriteJSON(filepath.Join(rel, "check.json"), tr.Check)
}

// RunTrial plays one trial of s with the given seed on a backend made by nb
// (nil: [ProcessBackend]), keeping node files under dir/nodes. It returns an
// *[InfraError] when the harness fails.
func RunTrial(ctx context.Context, s scenario.Scenario, seed uint64, dir string, nb BackendFactory) (TrialResult, error) {
	s = s.WithDefaults()
	began := time.Now()
	if nb == nil {
		nb = ProcessBackend
	}
	c, res, stopWorld, err := startWorld(ctx, s, nb, filepath.Join(dir, "nodes"))
	defer stopWorld()
	if err != nil {
		return TrialResult{}, err
	}

	rec := checker.NewRecorder(monoNow)
	log := withTriggers(rec) // what clients do can be a step's moment
	env := &trialEnv{c: c, pids: map[int]int{}, key: s.Lock.Key, clients: s.Clients, recorded: s.Lock.Kind != "external"}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	problems := &problemLog{}
	cl := &trialClients{}
	defer cl.close()
	if err := cl.start(c, s, res, log, env, problems); err != nil {
		return TrialResult{}, err
	}
	nem, err := newNemesis(env, s.Faults, log)
	if err != nil {
		return TrialResult{}, err
	}
	start, startMono, err := cl.startClock(ctx, s)
	if err != nil {
		return TrialResult{}, err
	}
	faults, notes, err := cl.run(ctx, s, nem, rng, start, problems)
	if err != nil {
		return TrialResult{}, err
	}
	tr := judgeTrial(s, inTimeOrder(rec.History()), startMono, faults, notes, problems)
	tr.Seed, tr.Wall = seed, time.Since(began)
	return tr, nil
}

// startWorld starts what a trial (or every round of a soak) plays on: the
// nodes, with their files under nodesDir, the background writes and the
// protected resource. stop stops what was started, on an error too. A
// failure is an *[InfraError].
func startWorld(ctx context.Context, s scenario.Scenario, nb BackendFactory, nodesDir string) (c *cluster.Cluster, res *resource, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	backend, err := nb(nodesDir, needsOf(s))
	if err != nil {
		return nil, nil, stop, &InfraError{Err: err}
	}
	stops = append(stops, func() { _ = backend.Close() })
	c, err = cluster.Start(ctx, backend, s.Topology.Cluster())
	if err != nil {
		return nil, nil, stop, &InfraError{Err: err}
	}
	stops = append(stops, func() { _ = c.Close() }, backgroundWrites(c, s.Topology.BackgroundWrites.D()))
	res, err = startResource(s.Fenced)
	if err != nil {
		return nil, nil, stop, &InfraError{Err: err}
	}
	stops = append(stops, res.close)
	return c, res, stop, nil
}

// trialClients are a trial's clients: workers in this process, and
// isolated clients in processes of their own.
type trialClients struct {
	inproc  []*worker
	procs   []*workerProc // until they are finished
	targets []*subject.Target
}

// start starts clients 1..s.Clients, each through its own view of c,
// recording into log; an isolated client's pid goes into env. A failure is
// an *[InfraError].
func (cl *trialClients) start(c *cluster.Cluster, s scenario.Scenario, res *resource, log *triggerLog, env *trialEnv, problems *problemLog) error {
	for p := 1; p <= s.Clients; p++ {
		view, err := clientView(c, s, res, p)
		if err != nil {
			return &InfraError{Err: err}
		}
		if slices.Contains(s.Isolate, p) {
			wp, err := startWorker(workerSpec{Process: p, Scenario: s, View: view}, log, os.Stderr)
			if err != nil {
				return &InfraError{Err: err}
			}
			cl.procs = append(cl.procs, wp)
			env.pids[p] = wp.pid()
			continue
		}
		tgt := subject.NewTarget(view)
		cl.targets = append(cl.targets, tgt)
		w := newWorker(p, s, tgt, func(e checker.Event) { log.Record(e) }, problems)
		w.res = &resourceClient{addr: view.Resource}
		cl.inproc = append(cl.inproc, w)
	}
	return nil
}

// close releases what the clients hold: their subjects (on the paths that
// do not reach finish), their targets, and isolated clients still running
// (only on an error path).
func (cl *trialClients) close() {
	for _, w := range cl.inproc {
		subject.Close(w.subj)
	}
	for i := len(cl.targets) - 1; i >= 0; i-- {
		cl.targets[i].Close()
	}
	for _, p := range cl.procs {
		p.wait(0)
	}
}

// startClock starts the trial's clock once every client's lock is up: lock
// programs answered their warm-up, isolated clients (which warm up their
// own) said they are ready. It returns the start on the wall clock and on
// CLOCK_MONOTONIC, in nanoseconds.
func (cl *trialClients) startClock(ctx context.Context, s scenario.Scenario) (time.Time, int64, error) {
	if err := warmUpAll(ctx, cl.inproc); err != nil {
		return time.Time{}, 0, &InfraError{Err: err}
	}
	for _, wp := range cl.procs {
		if err := wp.waitReady(readyTimeout()); err != nil {
			return time.Time{}, 0, &InfraError{Err: err}
		}
	}
	if err := alignStart(ctx, s.AlignStart.D()); err != nil {
		return time.Time{}, 0, err
	}
	start, startMono := time.Now(), monoNow()
	for _, wp := range cl.procs {
		if err := wp.start(startMono); err != nil {
			return time.Time{}, 0, &InfraError{Err: err}
		}
	}
	return start, startMono, nil
}

// run plays the clients and the nemesis for the trial's duration, finishes
// the clients and heals every fault. It returns the faults as evidence and
// the nemesis's notes. Clients that answered nothing are judged by the
// faults on them: an *[InfraError] if none explains it.
func (cl *trialClients) run(ctx context.Context, s scenario.Scenario, nem *nemesis, rng *rand.Rand, start time.Time, problems *problemLog) ([]evidence.Fault, []string, error) {
	runCtx, cancel := context.WithTimeout(ctx, s.Duration.D())
	defer cancel()
	if e := s.Early; e != nil {
		nem.settled = func() {
			end := max(time.Until(start.Add(e.Min)), e.Settle)
			t := time.AfterFunc(end, cancel)
			context.AfterFunc(runCtx, func() { t.Stop() })
		}
	}
	play(runCtx, ctx, cl.inproc, nem, rng, start)
	for _, p := range cl.procs { // they end at the trial's duration on their own, or here
		p.stop()
	}
	clients := len(cl.inproc) + len(cl.procs)
	var silent clientErrors
	for _, w := range cl.inproc {
		silent.add(w.process, w.finish())
	}
	nem.healAll(ctx)
	killed := nem.killedClients()
	for _, p := range cl.procs {
		silent.add(p.process, p.finish(s, killed[p.process], problems))
	}
	cl.procs = nil
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	faults, notes := nem.evidence()
	if err := silent.judge(clients, nem.pausedClients(), killed, faults, problems); err != nil {
		return nil, nil, &InfraError{Err: err}
	}
	return faults, notes, nil
}

// judgeTrial checks history h of a trial that started at startMono and
// weighs its evidence: what the trial observed, and why, if it proves
// nothing. Seed and Wall are left to the caller.
func judgeTrial(s scenario.Scenario, h checker.History, startMono int64, faults []evidence.Fault, notes []string, problems *problemLog) TrialResult {
	copt := CheckOptions(s)
	r := checker.CheckTimeout(h, copt, CheckTimeout)
	ev := evidence.Evaluate(evidence.Input{History: h, Result: r, Start: startMono, Faults: faults,
		Require: s.Require, Notes: notes, Problems: problems.all()})
	o := judge.Trial(s.Rules(), r, ev)
	return TrialResult{History: h, Check: r, Evidence: ev, Observed: o.Observed, Reason: o.Reason, checkOptions: copt,
		FirstViolation: judge.FirstViolation(h, r, o, s.Rules(), startMono)}
}

// clientView returns what client p of s dials on c: the nodes, the
// protected resource through a proxy of its own (r<p>, so one client's
// path can be delayed or cut alone) and, when the schedule needs them, its
// own links to the nodes.
func clientView(c *cluster.Cluster, s scenario.Scenario, res *resource, p int) (subject.View, error) {
	rp, err := c.AddProxy(fmt.Sprintf("r%d", p), res.addr())
	if err != nil {
		return subject.View{}, err
	}
	view := subject.ViewOf(c)
	view.Resource = rp.Addr()
	if s.UsesClientLinks() {
		return subject.ClientLinks(c, view, p)
	}
	return view, nil
}

// play runs the in-process clients and the nemesis's schedule from start
// until ctx ends; heals run under healCtx.
func play(ctx, healCtx context.Context, workers []*worker, nem *nemesis, rng *rand.Rand, start time.Time) {
	var wg sync.WaitGroup
	inPlace := nem.inPlace(ctx, workers)
	for _, w := range workers {
		w.inPlace = inPlace
		wg.Go(func() { w.run(ctx) })
	}
	nem.setStart(start)
	wg.Go(func() { nem.run(ctx, healCtx, rng, start) })
	wg.Go(func() { nem.watchSentinels(ctx) })
	wg.Go(func() { nem.watchSlot(ctx) })
	wg.Wait()
}

// A clientError is the error of one client's lock that never answered.
type clientError struct {
	process int
	err     error
}

// clientErrors lists the clients whose lock never answered.
type clientErrors []clientError

func (c *clientErrors) add(process int, err error) {
	if err != nil {
		*c = append(*c, clientError{process, err})
	}
}

// judge judges each silent client by its cause. A client that a fault
// stopped for good (paused without a for, or killed) is explained. Every
// other silence makes the trial inconclusive (a problem), naming the
// faults fired on the trial, which may have kept the lock from answering.
// Only a lock that never answered anything, not even a warm-up, for every
// one of the trial's clients, with no fault fired, is a harness failure:
// the returned error.
func (c clientErrors) judge(clients int, paused, killed map[int]bool, faults []evidence.Fault, problems *problemLog) error {
	var fired []string
	for _, f := range faults {
		if f.Fired != nil && f.Error == "" {
			fired = append(fired, f.Desc)
		}
	}
	unusable := 0
	for _, e := range c {
		if errors.Is(e.err, subject.ErrUnusable) {
			unusable++
		}
	}
	if unusable > 0 && unusable == clients && len(fired) == 0 {
		return c[0].err
	}
	cause := "with no fault on the trial"
	if len(fired) > 0 {
		cause = "while faults were on the trial that may have kept it from answering: " + strings.Join(fired, ", ")
	}
	for _, e := range c {
		if paused[e.process] || killed[e.process] {
			continue
		}
		msg := e.err.Error()
		for _, prefix := range []error{subject.ErrUnusable, subject.ErrSilent} {
			msg = strings.TrimPrefix(msg, prefix.Error()+": ")
		}
		problems.add("%s; %s", msg, cause)
	}
	return nil
}

// CheckOptions returns the checker options for histories of s, the same
// for `lockpick run` and `lockpick check`: an acquire whose outcome is
// unknown may hold the lock for at most the scenario's TTL.
func CheckOptions(s scenario.Scenario) *checker.Options {
	return &checker.Options{MaxTTL: s.WithDefaults().Lock.TTL.D()}
}

// inTimeOrder sorts events from all clients by time and renumbers them:
// isolated clients' events reach the recorder late, but carry their times.
func inTimeOrder(h checker.History) checker.History {
	sort.SliceStable(h, func(i, j int) bool { return h[i].Time < h[j].Time })
	for i := range h {
		h[i].Index = i
	}
	return h
}
