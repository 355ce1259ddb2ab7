package trial

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/judge"
	"github.com/lockpick/lockpick/results"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/subject"
)

// SoakOptions configures [Soak]. Zero fields take their defaults.
type SoakOptions struct {
	// For is how long the soak runs: as many rounds as start within it (at
	// least one). Required.
	For time.Duration
	// Every is how often a round starts: round k starts k × Every after
	// the first, or once round k-1 has ended, its leases have run out and
	// the topology is put back, if that is later. default: the scenario's
	// duration; it must not be shorter.
	Every time.Duration
	// Seed seeds the jitter and aim of every round. default: 1.
	Seed uint64
	// Out is the folder the run folder is created in. default: results/runs.
	Out string
	// Name is the run folder's name. default: <time>-soak-<scenario>-seed<seed>.
	Name string
	// Backend makes the backend. default: [ProcessBackend].
	Backend BackendFactory
	// StopOnAnomaly ends the soak at the first anomaly found that the
	// scenario does not tolerate (a partial verdict).
	StopOnAnomaly bool
	// Progress, if set, is called about once a second.
	Progress func(SoakProgress)
	// Anomaly, if set, is called with each anomaly as soon as it is proven.
	Anomaly func(SoakAnomaly)
}

// A SoakProgress is where a soak stands.
type SoakProgress struct {
	Elapsed, Total time.Duration
	Round, Rounds  int // the round being played, of how many were planned (For / Every)
	Events         int
	EventsPerSec   float64
	Anomalies      int
	PeakRSS        int64 // bytes, of this process
}

// A SoakAnomaly is an anomaly found during a soak, with its round and
// when it was found.
type SoakAnomaly struct {
	Round   int
	Found   time.Duration // since the soak began
	Anomaly checker.Anomaly
}

// Soak starts s's topology and clients once and plays s round after round
// for opt.For: each round is a trial on the kept topology (the clients
// start their script, the fault schedule plays, every fault is healed at
// its end), then the soak waits until no lease of the round can still be
// held and puts the topology back ([cluster.Cluster.Restore]), so every
// round starts as the first did. Each round is checked alone, as it is
// recorded, so its verdict is that of `lockpick check` of its own events;
// every event is written to history.jsonl.gz, a round with an anomaly also
// gets its own history (round-NNN/history.jsonl) and the report shows the
// first.
// verdict.json has one trial result per round and a soak section.
// Isolated clients get a new process each round; their events are checked
// when the round ends. A cancelled ctx ends the soak with a partial
// verdict, which is returned with no error. Harness failures come back as
// *[InfraError] and leave no run folder.
func Soak(ctx context.Context, s scenario.Scenario, opt SoakOptions) (*results.Verdict, string, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, "", err
	}
	if opt.For <= 0 {
		return nil, "", fmt.Errorf("%w: soak: the length must be positive", scenario.ErrBadScenario)
	}
	if opt.Every == 0 {
		opt.Every = s.Duration.D()
	}
	if opt.Every < s.Duration.D() {
		return nil, "", fmt.Errorf("%w: soak: a round every %v is shorter than the scenario's duration (%v)", scenario.ErrBadScenario, opt.Every, s.Duration.D())
	}
	o := (&Options{Seed: opt.Seed, Out: opt.Out, Name: opt.Name, Backend: opt.Backend}).WithDefaults()
	return intoFolder(o, FolderName("soak-", s.Name, o.Seed, ""), func(dir *results.RunDir) (*results.Verdict, error) {
		return soak(ctx, s, o, opt, dir)
	})
}

func soak(ctx context.Context, s scenario.Scenario, o Options, opt SoakOptions, dir *results.RunDir) (*results.Verdict, error) {
	if err := dir.WriteJSON("scenario.json", s); err != nil {
		return nil, &InfraError{Err: err}
	}
	began := time.Now()
	c, res, stopWorld, err := startWorld(ctx, s, o.Backend, dir.Path("nodes"))
	defer stopWorld()
	if err != nil {
		return nil, err
	}
	log, err := newSoakLog(dir, s)
	if err != nil {
		return nil, &InfraError{Err: err}
	}
	defer log.abort()
	r := newSoakRun(ctx, s, o, opt, c, log)
	defer r.waitProcs() // only with work left on an error path
	closeTargets, err := r.startClients(ctx, res)
	defer closeTargets()
	if err != nil {
		return nil, err
	}
	out, stopped, err := r.run(ctx)
	if err != nil {
		return nil, err
	}
	return writeSoak(dir, s, o.Seed, out, r.summary(began, len(out), stopped))
}

// newSoakRun prepares the rounds of s on c, recorded into log. Heals and
// the wind-up run even when ctx is cancelled: an interrupted soak still
// heals, checks and writes what it has.
func newSoakRun(ctx context.Context, s scenario.Scenario, o Options, opt SoakOptions, c *cluster.Cluster, log *soakLog) *soakRun {
	return &soakRun{s: s, opt: opt, c: c, hctx: context.WithoutCancel(ctx), log: log,
		rec: withTriggers(log), problems: &problemLog{},
		env: &trialEnv{c: c, pids: map[int]int{}, key: s.Lock.Key, clients: s.Clients, recorded: s.Lock.Kind != "external"}, views: map[int]subject.View{},
		rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))}
}

// run plays the rounds, watching the history as it grows, until the soak's
// time is up, ctx ends or an anomaly stops it (with StopOnAnomaly); then it
// winds the clients up and closes the log. It returns the rounds and why
// the soak stopped early ("" if it did not).
func (r *soakRun) run(ctx context.Context) ([]*soakRound, string, error) {
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	stop := &soakStop{on: r.opt.StopOnAnomaly, tolerate: r.s.Tolerate, stop: stopRun}
	found := func(a SoakAnomaly) {
		if r.opt.Anomaly != nil {
			r.opt.Anomaly(a)
		}
		stop.found(a.Anomaly)
	}
	r.start = alignUp(time.Now(), r.s.AlignStart.D())
	stopWatch := r.startWatch(found)
	defer stopWatch() // on an error path too: it must not write into an aborted folder

	if err := r.rounds(runCtx); err != nil {
		return nil, "", err
	}
	stop.over() // an anomaly found from now on is of a soak played to its end
	stopRun()
	r.windUp()
	stopWatch()
	stopped := stop.why
	if ctx.Err() != nil && stopped == "" {
		stopped = "interrupted"
	}
	out, err := r.log.close(r.start, found)
	if err != nil {
		return nil, "", &InfraError{Err: err}
	}
	return out, stopped, nil
}

// startWatch watches the log from the soak's start in the background,
// reporting anomalies to found and progress to the options' Progress; the
// func it returns stops the watch and waits for it, and may be called again.
func (r *soakRun) startWatch(found func(SoakAnomaly)) func() {
	done := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		r.log.watch(done, r.start, found, r.opt.Progress, r.opt.For, max(int(r.opt.For/r.opt.Every), 1))
	})
	return sync.OnceFunc(func() { close(done); watch.Wait() })
}

// summary is the soak section of the verdict: the rounds played, the time
// taken, why it stopped early, and the memory lockpick used.
func (r *soakRun) summary(began time.Time, rounds int, stopped string) *results.Soak {
	end := memorySample(time.Since(r.start))
	sum := &results.Soak{PlannedSeconds: r.opt.For.Seconds(), WallSeconds: time.Since(began).Seconds(),
		Rounds: rounds, Events: r.log.events, Partial: stopped != "", Stopped: stopped,
		CheckNote: r.log.checkNote(), EverySeconds: r.opt.Every.Seconds(), Restored: r.restored,
		Memory: append(r.log.memory, end)}
	sum.PeakRSSBytes = peakOf(peakRSS(), sum.Memory)
	return sum
}

// A soakRun is a soak under way: its topology, its clients, its log and
// where its rounds stand.
type soakRun struct {
	s        scenario.Scenario
	opt      SoakOptions
	c        *cluster.Cluster
	hctx     context.Context // for heals and the wind-up: never cancelled
	log      *soakLog
	rec      eventLog // log, through which what clients do can be a step's moment
	env      *trialEnv
	problems *problemLog
	workers  []*worker
	views    map[int]subject.View // of the isolated clients
	procs    []*workerProc        // the round's isolated clients
	rng      *rand.Rand
	start    time.Time // when round 1 is due
	seen     int       // problems already given to a round
	restored int
	pending  string // why the next round cannot start from the start layout
}

// startClients makes the in-process clients, kept for the whole soak, and
// warms their locks up before the first round, as a trial does; an
// isolated client gets a process each round. The returned func closes
// their subjects and targets.
func (r *soakRun) startClients(ctx context.Context, res *resource) (func(), error) {
	var closers []func()
	closeAll := func() {
		for _, f := range closers {
			f()
		}
	}
	for p := 1; p <= r.s.Clients; p++ {
		view, err := clientView(r.c, r.s, res, p)
		if err != nil {
			return closeAll, &InfraError{Err: err}
		}
		if slices.Contains(r.s.Isolate, p) {
			r.views[p] = view // its process is started each round
			continue
		}
		tgt := subject.NewTarget(view)
		closers = append(closers, tgt.Close)
		w := newWorker(p, r.s, tgt, func(e checker.Event) { r.rec.Record(e) }, r.problems)
		w.res = &resourceClient{addr: view.Resource}
		r.workers = append(r.workers, w)
		closers = append(closers, func() { subject.Close(w.subj) })
	}
	if err := warmUpAll(ctx, r.workers); err != nil {
		return closeAll, &InfraError{Err: err}
	}
	return closeAll, nil
}

// rounds plays round after round until the soak's length is reached or
// ctx ends. Round k (from 0) is due k × every after the first, or as soon
// as round k-1 has been played, waited out and put back, if that is later;
// it starts on the scenario's align_start grid, as a trial does.
func (r *soakRun) rounds(ctx context.Context) error {
	end := r.start.Add(r.opt.For)
	align := r.s.AlignStart.D()
	due := func(k int) time.Time { return r.start.Add(time.Duration(k) * r.opt.Every) }
	for k := 0; ctx.Err() == nil; k++ {
		at := roundAt(due(k), time.Now(), align)
		if k > 0 && !at.Before(end) {
			return nil
		}
		failed := r.startIsolated()
		at = roundAt(at, time.Now(), align) // starting the clients' processes took longer
		if !sleep(ctx, time.Until(at)) {
			return nil
		}
		if err := r.play(ctx, k+1, at, failed); err != nil {
			return err
		}
		next := roundAt(due(k+1), time.Now(), align)
		if ctx.Err() != nil || !next.Before(end) {
			return nil // no round after this one
		}
		if over := r.rest(ctx, k+1, next.Add(-restoreLead), end); over {
			return nil
		}
	}
	return nil
}

// startIsolated starts this round's process of each isolated client and
// waits until they are ready. A process that does not start makes its
// round inconclusive (the returned reasons); the soak goes on.
func (r *soakRun) startIsolated() []string {
	var failed []string
	for _, p := range r.s.Isolate {
		delete(r.env.pids, p) // last round's process is gone
		wp, err := startWorker(workerSpec{Process: p, Scenario: r.s, View: r.views[p]}, r.rec, os.Stderr)
		if err != nil {
			failed = append(failed, fmt.Sprintf("client %d's process did not start: %v", p, err))
			continue
		}
		r.procs = append(r.procs, wp)
		r.env.pids[p] = wp.pid()
	}
	for _, wp := range r.procs {
		if err := wp.waitReady(readyTimeout()); err != nil {
			failed = append(failed, fmt.Sprintf("client %d's process: %v", wp.process, err))
		}
	}
	return failed
}

// play plays round k from at: the clients' script and the fault schedule
// for the scenario's duration, then every fault is healed, the isolated
// clients wound up and the round ended in the log.
func (r *soakRun) play(ctx context.Context, k int, at time.Time, failed []string) error {
	// The nemesis first: it counts the moments its steps wait for afresh,
	// before this round's clients do anything.
	nem, err := newNemesis(r.env, r.s.Faults, r.rec)
	if err != nil {
		return err
	}
	startMono := monoNow()
	r.log.begin(k, startMono)
	for _, wp := range r.procs {
		if err := wp.start(startMono); err != nil {
			failed = append(failed, fmt.Sprintf("client %d's process did not take the start: %v", wp.process, err))
		}
	}
	for _, f := range failed {
		r.problems.add("%s", f)
	}
	if r.pending != "" {
		r.problems.add("%s", r.pending) // this round's, not the one before
		r.pending = ""
	}
	roundCtx, cancel := context.WithDeadline(ctx, at.Add(r.s.Duration.D()))
	play(roundCtx, r.hctx, r.workers, nem, r.rng, at)
	cancel()
	nem.healAll(r.hctx)
	killed, paused := nem.killedClients(), nem.pausedClients()
	for _, wp := range r.procs {
		if err := wp.finish(r.s, killed[wp.process], r.problems); err != nil && !killed[wp.process] && !paused[wp.process] {
			r.problems.add("client %d: %v", wp.process, err)
		}
	}
	r.procs = nil
	r.log.flush()
	faults, notes := nem.evidence()
	all := r.problems.all()
	r.log.end(k, faults, notes, all[r.seen:], ctx.Err() != nil)
	r.seen = len(all)
	return nil
}

// rest waits out round k's leases and puts the topology back at restoreAt
// (see the package-level rest). It reports whether the soak is over: the
// leases outlast it.
func (r *soakRun) rest(ctx context.Context, k int, restoreAt, end time.Time) bool {
	did, err := rest(ctx, r.c, r.log, k, r.log.opt, restoreAt, end)
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, errSoakOver):
		return true // the leases outlast the soak: no round may start
	case err != nil:
		// The next round would not start from the topology its
		// schedule was written for: it proves nothing.
		r.pending = fmt.Sprintf("the topology could not be put back after round %d: %v", k, err)
	case did != "":
		r.restored++
		r.log.addNote(k, "after the round the topology had drifted from how it started ("+did+"); it was put back before the next")
	}
	return false
}

// windUp stops the in-process clients; what they report goes to the last
// round.
func (r *soakRun) windUp() {
	for _, w := range r.workers {
		if err := w.finish(); err != nil {
			r.problems.add("%v", err)
		}
	}
	if all := r.problems.all(); len(all) > r.seen {
		r.log.addProblems(all[r.seen:])
	}
}

// waitProcs waits for the isolated clients' processes left running.
func (r *soakRun) waitProcs() {
	for _, p := range r.procs {
		p.wait(0)
	}
}

// writeSoak writes the verdict of the rounds out, with the soak section
// sum, and the report, opened on the first round with an anomaly.
func writeSoak(dir *results.RunDir, s scenario.Scenario, seed uint64, out []*soakRound, sum *results.Soak) (*results.Verdict, error) {
	trials := make([]results.Trial, len(out))
	checks := make([]checker.Result, len(out))
	shown := 0
	for i, r := range out {
		trials[i] = results.Trial{Trial: r.round, Seed: seed, Observed: r.observed, Reason: r.reason,
			WallSeconds: s.Duration.D().Seconds(), Evidence: r.ev, Dir: r.window}
		checks[i] = r.check
		if r.history != nil && (out[shown].history == nil || len(out[shown].check.Anomalies) == 0) {
			shown = i // the first anomalous round kept, else the last kept
		}
	}
	v := judge.Run(s.Name, s.Rules(), seed, trials, checks)
	for i, e := range v.Examples {
		v.Examples[i] = "round" + strings.TrimPrefix(e, "trial")
	}
	// The soak's wall time, not the sum of its rounds' durations.
	v.WallSeconds = sum.WallSeconds
	v.WallSecondsPerTrial = sum.WallSeconds / float64(max(len(out), 1))
	sum.Anomalies = maps.Clone(v.Anomalies)
	for _, r := range out {
		if len(r.check.Anomalies) > 0 {
			sum.FirstAnomaly = r.round
			if r.window != "" {
				sum.Window = filepath.Join(r.window, checker.HistoryFile)
			}
			break
		}
	}
	v.Soak = sum
	if err := dir.WriteJSON("verdict.json", v); err != nil {
		return nil, &InfraError{Err: err}
	}
	if len(out) > 0 {
		r := out[shown]
		tr := TrialResult{Seed: seed, History: r.history, Check: r.check, Evidence: r.ev, Observed: r.observed, Reason: r.reason}
		if err := WriteReport(dir, s, v, tr, trials[shown]); err != nil {
			return nil, &InfraError{Err: err}
		}
	}
	return v, nil
}

// A soakStop ends a soak at the first anomaly its scenario does not
// tolerate, when on (--stop-on-anomaly): a tolerated anomaly does not
// change the verdict, so it is no reason to stop.
type soakStop struct {
	on       bool
	tolerate []string
	stop     func()
	once     sync.Once
	why      string // "anomaly" once stopped
}

// found stops the soak if a is an anomaly to stop on.
func (st *soakStop) found(a checker.Anomaly) {
	if st.on && !judge.Tolerated(a.Kind, st.tolerate) {
		st.once.Do(func() { st.why = "anomaly"; st.stop() })
	}
}

// over says the rounds are over: an anomaly found later stops nothing.
func (st *soakStop) over() { st.once.Do(func() {}) }

// roundAt is when a round due at due starts: then, or now if that is
// later, on the align_start grid (the next multiple of align on the wall
// clock; align 0: no grid).
func roundAt(due, now time.Time, align time.Duration) time.Time {
	if now.After(due) {
		due = now
	}
	return alignUp(due, align)
}

// alignUp returns t, or the first multiple of d after it on the wall clock.
func alignUp(t time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return t
	}
	if down := t.Truncate(d); !down.Equal(t) {
		return down.Add(d)
	}
	return t
}

// peakOf is the peak resident memory: getrusage's, or a sample's if that is
// higher (the kernel updates its high-water mark lazily, so a sample read
// later may see more).
func peakOf(rusage int64, samples []results.MemorySample) int64 {
	peak := rusage
	for _, m := range samples {
		peak = max(peak, m.RSSBytes)
	}
	return peak
}

// errSoakOver is rest's answer when the soak ends before the next round.
var errSoakOver = errors.New("the soak ends before the next round")

// restoreLead is how long before a round the topology is put back: long
// enough for a restore (about 2 s with sentinels), short enough that the
// round meets the layout a fresh topology has. Sentinels move a replica they
// see replicating past the master's address (through its replication
// proxy) onto that address about 10 s after they start watching it
// (+fix-slave-config), after which cut-replication would cut nothing.
const restoreLead = 3 * time.Second

// rest waits until no lease recorded in round k can still be held, by the
// checker's rules, so that the next round starts with the lock free and
// putting the topology back cannot wipe a lease someone holds; then, at
// restoreAt or at once if that has passed, it puts the topology back and
// returns what that changed. It returns errSoakOver, at once, when the
// leases outlast end.
func rest(ctx context.Context, c *cluster.Cluster, log *soakLog, k int, copt *checker.Options, restoreAt, end time.Time) (string, error) {
	wait := time.Duration(checker.MayHoldUntil(log.roundHistory(k), copt) - monoNow())
	if !time.Now().Add(wait).Before(end) {
		return "", errSoakOver // no round could start after the wait
	}
	if !sleep(ctx, wait) && ctx.Err() != nil {
		return "", ctx.Err()
	}
	if !sleep(ctx, time.Until(restoreAt)) && ctx.Err() != nil {
		return "", ctx.Err()
	}
	return c.Restore(ctx)
}

// A soakRound is one round's record until it is summed up.
type soakRound struct {
	round     int
	first     int   // index of its first event
	startMono int64 // when its schedule starts
	history   checker.History
	stream    *checker.Stream // its check, nil once closed
	ended     bool
	cut       bool
	faults    []evidence.Fault
	notes     []string
	problems  []string

	check    checker.Result // once its stream is closed
	ev       evidence.Evidence
	observed string
	reason   string
	window   string // its folder, with its history, when it has an anomaly
}

// A soakLog records a soak's events: it stamps them, writes them to the
// gzipped history and feeds each round's events to that round's own
// checker.Stream, so that every rule judges a round alone, as `lockpick
// check` judges the round's window. It keeps the events of the rounds not
// summed up yet. It is an [eventLog].
type soakLog struct {
	mu     sync.Mutex
	f      *os.File
	zw     *gzip.Writer
	bw     *bufio.Writer
	enc    *json.Encoder
	opt    *checker.Options
	events int
	werr   error    // the first write error
	notes  []string // what qualifies the check (check_note)
	whole  []wholeCheck

	rounds   []*soakRound // not yet summed up, in order
	done     []*soakRound // summed up
	cur      *soakRound   // the round whose stream is open, if any
	stray    int          // events recorded with no round open
	reported map[string]bool
	fresh    []SoakAnomaly // found, not yet reported
	findings int
	require  []evidence.Requirement
	rules    judge.Rules

	// With isolated clients, whose events come late, events wait in
	// pending until their round is flushed (ordered).
	ordered bool
	pending checker.History

	dir     *results.RunDir // where rounds with an anomaly get their history
	windows []window        // to write once the lock is let go
	kept    *soakRound      // the last round summed up without an anomaly, history kept for the report
	shown   bool            // a round with an anomaly keeps its history for the report
	memory  []results.MemorySample
}

var _ eventLog = (*soakLog)(nil)

// newSoakLog writes the history of a soak of s into dir.
func newSoakLog(dir *results.RunDir, s scenario.Scenario) (*soakLog, error) {
	f, err := os.Create(dir.Path(checker.HistoryFileGz))
	if err != nil {
		return nil, err
	}
	zw := gzip.NewWriter(f)
	bw := bufio.NewWriterSize(zw, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &soakLog{f: f, zw: zw, bw: bw, enc: enc, opt: CheckOptions(s), require: s.Require, rules: s.Rules(),
		dir: dir, ordered: len(s.Isolate) > 0}, nil
}

// Record stamps e as a [checker.Recorder] does (the next index, the time
// if zero, under the lock so times never decrease), writes it and checks
// it; in ordered mode it keeps it for flush, which indexes it.
func (l *soakLog) Record(e checker.Event) checker.Event {
	e.Value = slices.Clone(e.Value)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Time == 0 {
		e.Time = monoNow()
	}
	if l.ordered {
		l.pending = append(l.pending, e) // indexed when the round is flushed
		return e
	}
	l.add(e)
	return e
}

// flush puts the events recorded in ordered mode into the history, in time
// order: once a round's isolated clients are done, no earlier event can
// come.
func (l *soakLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.SortStableFunc(l.pending, func(a, b checker.Event) int { return cmp.Compare(a.Time, b.Time) })
	for _, e := range l.pending {
		l.add(e)
	}
	l.pending = nil
}

// add indexes e, writes it, and gives it to the open round; l.mu is held.
// Every event is recorded between a round's begin and its end (the clients
// and the nemesis act within play), so an event with no round open is only
// counted, and the check note says so.
func (l *soakLog) add(e checker.Event) {
	e.Index = l.events
	l.events++
	if err := l.enc.Encode(&e); err != nil && l.werr == nil {
		l.werr = err
	}
	r := l.cur
	if r == nil {
		l.stray++
		return
	}
	if err := r.stream.Add(e); err != nil {
		l.note(fmt.Sprintf("round %d: %v", r.round, err)) // events come in time order, so it cannot happen
	}
	r.history = append(r.history, e)
}

// A wholeCheck is the rounds checked whole for one reason.
type wholeCheck struct {
	why    string
	rounds []int
}

// checkedWhole notes that round k was checked whole because of err; l.mu
// is held.
func (l *soakLog) checkedWhole(k int, err error) {
	why := strings.TrimPrefix(err.Error(), checker.ErrNeedHistory.Error()+": ")
	i := slices.IndexFunc(l.whole, func(w wholeCheck) bool { return w.why == why })
	if i < 0 {
		l.whole = append(l.whole, wholeCheck{why: why})
		i = len(l.whole) - 1
	}
	l.whole[i].rounds = append(l.whole[i].rounds, k)
}

// checkNote is what qualifies the soak's check, "" if nothing does.
func (l *soakLog) checkNote() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	notes := slices.Clone(l.notes)
	for _, w := range l.whole {
		rounds := make([]string, len(w.rounds))
		for i, k := range w.rounds {
			rounds[i] = strconv.Itoa(k)
		}
		what := "round " + rounds[0] + " was checked whole, as lockpick check checks its window"
		if len(rounds) > 1 {
			what = "rounds " + strings.Join(rounds, ", ") + " were checked whole, as lockpick check checks their windows"
		}
		notes = append(notes, what+" ("+w.why+")")
	}
	return strings.Join(notes, "; ")
}

// note adds a note on the check, once; l.mu is held.
func (l *soakLog) note(text string) {
	if !slices.Contains(l.notes, text) {
		l.notes = append(l.notes, text)
	}
}

// History returns the events of the rounds not summed up (the current one,
// and the one before until it is): enough for the nemesis to tell who
// holds the lock.
func (l *soakLog) History() checker.History {
	l.mu.Lock()
	defer l.mu.Unlock()
	var h checker.History
	for _, r := range l.rounds {
		h = append(h, r.history...)
	}
	pending := slices.Clone(l.pending)
	slices.SortStableFunc(pending, func(a, b checker.Event) int { return cmp.Compare(a.Time, b.Time) })
	return append(h, pending...)
}

// begin starts round k, whose schedule starts at startMono, with a check of
// its own: a round starts with no lease held and no operation open, so its
// events alone are a complete history.
func (l *soakLog) begin(k int, startMono int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &soakRound{round: k, first: l.events, startMono: startMono, stream: checker.NewStream(l.opt)}
	l.rounds = append(l.rounds, r)
	l.cur = r
	l.reported = map[string]bool{}
}

// end closes round k with the nemesis's record and closes its check: all
// its events are in (flush was called).
func (l *soakLog) end(k int, faults []evidence.Fault, notes, problems []string, cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := findRound(l.rounds, k); r != nil {
		r.ended, r.cut, r.faults, r.notes, r.problems = true, cut, faults, notes, problems
		l.closeRound(r)
	}
}

// closeRound closes r's stream and keeps its result; l.mu is held. When
// the stream cannot give the exact result (a lost update to explain), the
// round's history is checked whole, as `lockpick check` checks its window,
// and the check note names the round. The anomalies not reported yet are
// queued for the next report.
func (l *soakLog) closeRound(r *soakRound) {
	if r.stream == nil {
		return
	}
	res, err := r.stream.Close()
	r.stream = nil
	if l.cur == r {
		l.cur = nil
	}
	if err != nil {
		res = checker.CheckTimeout(r.history, l.opt, CheckTimeout)
		l.checkedWhole(r.round, err)
	}
	r.check = res
	l.queue(r.round, res.Anomalies)
}

// queue adds the anomalies of round k not reported yet to the next
// report; l.mu is held. A lost update the stream reported on a key is not
// reported again when the round's whole history explains it (its
// operations may differ); the verdict counts those of the whole history.
func (l *soakLog) queue(k int, list []checker.Anomaly) {
	for _, a := range list {
		id := fmt.Sprint(a.Kind, a.Ops)
		if l.reported[id] || (a.Kind == checker.LostUpdate && l.reported[fmt.Sprint(a.Kind, " ", a.Key)]) {
			continue
		}
		l.reported[id] = true
		l.reported[fmt.Sprint(a.Kind, " ", a.Key)] = true
		l.findings++
		l.fresh = append(l.fresh, SoakAnomaly{Round: k, Anomaly: a})
	}
}

// addProblems adds problems found as the clients stopped to the last round.
func (l *soakLog) addProblems(p []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.rounds); n > 0 {
		l.rounds[n-1].problems = append(l.rounds[n-1].problems, p...)
	}
}

// roundHistory returns a copy of round k's events, nil once it is summed up.
func (l *soakLog) roundHistory(k int) checker.History {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := findRound(l.rounds, k); r != nil {
		return slices.Clone(r.history)
	}
	return nil
}

// addNote adds an observation to round k's notes, if it is not summed up yet.
func (l *soakLog) addNote(k int, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := findRound(l.rounds, k); r != nil {
		r.notes = append(r.notes, text)
	}
}

// poll queues the anomalies the open round's stream has proven since the
// last poll, then reports every anomaly queued, each with its round.
func (l *soakLog) poll(since time.Time, found func(SoakAnomaly)) {
	l.mu.Lock()
	if r := l.cur; r != nil {
		r.stream.Decide()
		l.queue(r.round, r.stream.Anomalies())
	}
	l.mu.Unlock()
	l.report(since, found)
}

// report calls found with every anomaly queued, outside the lock.
func (l *soakLog) report(since time.Time, found func(SoakAnomaly)) {
	l.mu.Lock()
	fresh := l.fresh
	l.fresh = nil
	l.mu.Unlock()
	for _, a := range fresh {
		a.Found = time.Since(since)
		found(a)
	}
}

// findRound returns round k of rounds, or nil.
func findRound(rounds []*soakRound, k int) *soakRound {
	for _, r := range rounds {
		if r.round == k {
			return r
		}
	}
	return nil
}

// settle sums up the rounds that ended before the last round began: their
// evidence and observation are final (their checks were closed at their
// end), and their events are let go (written to their window if they have
// an anomaly, kept for the report if one is to be shown). The last round
// stays open to what the soak's end adds (the clients' problems).
func (l *soakLog) settle() {
	defer l.writeWindows()
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.rounds) > 1 && l.rounds[0].ended {
		l.closeRound(l.rounds[0])
		l.evaluate(l.rounds[0])
		l.done = append(l.done, l.rounds[0])
		l.rounds = l.rounds[1:]
	}
}

// evaluate sums up round r from its check.
func (l *soakLog) evaluate(r *soakRound) {
	res := r.check
	r.ev = evidence.Evaluate(evidence.Input{History: r.history, Result: res, Start: r.startMono,
		Faults: r.faults, Require: l.require, Notes: r.notes, Problems: r.problems})
	o := judge.Trial(l.rules, res, r.ev)
	r.observed, r.reason = o.Observed, o.Reason
	if len(res.Anomalies) > 0 {
		// A round starts with no lease held and no operation open, so its
		// events alone reproduce its anomalies. The file is written once
		// the lock is let go: clients record through it.
		r.window = fmt.Sprintf("round-%03d", r.round)
		l.windows = append(l.windows, window{r, r.history})
		if !l.shown {
			l.shown = true // the first: the report opens on it
			return
		}
	} else if !l.shown && !r.cut {
		if l.kept != nil {
			l.kept.history = nil
		}
		l.kept = r // shown if no round has an anomaly
		return
	}
	r.history = nil // the round's events are on disk and checked
}

// A window is a round's history, to be written to its own file.
type window struct {
	r *soakRound
	h checker.History
}

// writeWindows writes the windows of the rounds summed up since the last
// call, outside the lock. A window that cannot be written is noted in its
// round, which then names no window.
func (l *soakLog) writeWindows() {
	l.mu.Lock()
	todo := l.windows
	l.windows = nil
	l.mu.Unlock()
	for _, w := range todo {
		err := os.MkdirAll(l.dir.Path(w.r.window), 0o755)
		if err == nil {
			err = checker.WriteFile(l.dir.Path(filepath.Join(w.r.window, checker.HistoryFile)), w.h)
		}
		if err != nil {
			l.mu.Lock()
			w.r.window = ""
			w.r.ev.Notes = append(w.r.ev.Notes, "its history could not be written: "+err.Error())
			l.mu.Unlock()
		}
	}
}

// watch polls for anomalies every 200 ms and reports progress every
// second until done is closed.
func (l *soakLog) watch(done <-chan struct{}, start time.Time, found func(SoakAnomaly), progress func(SoakProgress), total time.Duration, rounds int) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	lastAt, lastEvents := start, 0
	for i := 1; ; i++ {
		select {
		case <-done:
			return
		case <-t.C:
		}
		l.poll(start, found)
		l.settle()
		if at := time.Since(start); at >= nextMemoryMark(len(l.memory)) {
			m := memorySample(at)
			l.mu.Lock()
			l.memory = append(l.memory, m)
			l.mu.Unlock()
		}
		if progress == nil || i%5 != 0 {
			continue
		}
		l.mu.Lock()
		p := SoakProgress{Elapsed: time.Since(start), Total: total, Rounds: rounds, Events: l.events, Anomalies: l.findings}
		if n := len(l.rounds); n > 0 {
			p.Round = l.rounds[n-1].round
		}
		l.mu.Unlock()
		p.EventsPerSec = float64(p.Events-lastEvents) / time.Since(lastAt).Seconds()
		lastAt, lastEvents = time.Now(), p.Events
		p.PeakRSS = peakRSS()
		progress(p)
	}
}

// close closes the check of every round left, reports the anomalies not
// reported yet (the last round's among them) to found, sums up every round
// left, writes the end of the history and returns the rounds of the
// verdict: every round played, and a round cut short only if it has an
// anomaly. The history file stays in place.
func (l *soakLog) close(since time.Time, found func(SoakAnomaly)) ([]*soakRound, error) {
	l.flush() // nothing should be left; nothing may be lost either
	l.mu.Lock()
	for _, r := range l.rounds {
		l.closeRound(r)
	}
	if l.stray > 0 {
		l.note(fmt.Sprintf("%d events were recorded outside every round and were not checked", l.stray))
	}
	l.mu.Unlock()
	l.report(since, found)
	l.mu.Lock()
	for _, r := range l.rounds {
		l.evaluate(r)
	}
	all := append(l.done, l.rounds...)
	l.rounds, l.done = nil, nil
	l.mu.Unlock()
	l.writeWindows()
	if err := l.finish(); err != nil {
		return nil, err
	}
	var out []*soakRound
	for _, r := range all {
		if !r.cut || len(r.check.Anomalies) > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// finish flushes and closes the history file.
func (l *soakLog) finish() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return l.werr
	}
	err := errors.Join(l.werr, l.bw.Flush(), l.zw.Close(), l.f.Sync(), l.f.Close())
	l.f = nil
	return err
}

// abort closes the history file if close was never reached.
func (l *soakLog) abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// memoryMarks are when a soak samples its memory; after the last, every
// 30 minutes.
var memoryMarks = []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, 45 * time.Minute, 60 * time.Minute}

// nextMemoryMark returns when sample i is due.
func nextMemoryMark(i int) time.Duration {
	if i < len(memoryMarks) {
		return memoryMarks[i]
	}
	return memoryMarks[len(memoryMarks)-1] + time.Duration(i-len(memoryMarks)+1)*30*time.Minute
}

// memorySample reads this process's resident memory and Go heap now.
func memorySample(at time.Duration) results.MemorySample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := results.MemorySample{AtSeconds: at.Seconds(), HeapBytes: int64(ms.HeapInuse)}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			m.RSSBytes = pages * int64(os.Getpagesize())
		}
	}
	return m
}

// peakRSS returns the peak resident memory of this process in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}
