package scenarios

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/lockpick/lockpick/results"
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
	// StopOnAnomaly ends the soak at the first anomaly found (a partial verdict).
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

// A SoakAnomaly is an anomaly found during a soak, with its round (the
// round its first operation was recorded in) and when it was found.
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
// round starts as the first did. The history is checked as it is recorded
// and written to history.jsonl.gz; a round with an anomaly also gets its
// own history (round-NNN/history.jsonl) and the report shows the first.
// verdict.json has one trial result per round and a soak section.
// Isolated clients get a new process each round; their events are checked
// when the round ends. A cancelled ctx ends the soak with a partial
// verdict, which is returned with no error. Harness failures come back as
// *[InfraError] and leave no run folder.
func Soak(ctx context.Context, s Scenario, opt SoakOptions) (*results.Verdict, string, error) {
	s = s.withDefaults()
	if err := s.Validate(); err != nil {
		return nil, "", err
	}
	if opt.For <= 0 {
		return nil, "", fmt.Errorf("%w: soak: the length must be positive", ErrBadScenario)
	}
	if opt.Every == 0 {
		opt.Every = s.Duration.D()
	}
	if opt.Every < s.Duration.D() {
		return nil, "", fmt.Errorf("%w: soak: a round every %v is shorter than the scenario's duration (%v)", ErrBadScenario, opt.Every, s.Duration.D())
	}
	o := (&Options{Seed: opt.Seed, Out: opt.Out, Name: opt.Name, Backend: opt.Backend}).withDefaults()
	return intoFolder(o, folderName("soak-", s.Name, o.Seed, ""), func(dir *results.RunDir) (*results.Verdict, error) {
		return soak(ctx, s, o, opt, dir)
	})
}

func soak(ctx context.Context, s Scenario, o Options, opt SoakOptions, dir *results.RunDir) (*results.Verdict, error) {
	if err := dir.WriteJSON("scenario.json", s); err != nil {
		return nil, &InfraError{Err: err}
	}
	began := time.Now()
	backend, err := o.Backend(dir.Path("nodes"), s.needs())
	if err != nil {
		return nil, &InfraError{Err: err}
	}
	defer backend.Close()
	// Heals and the wind-up run even when ctx is cancelled: an interrupted
	// soak still heals, checks and writes what it has.
	hctx := context.WithoutCancel(ctx)
	c, err := cluster.Start(ctx, backend, s.Topology.cluster())
	if err != nil {
		return nil, &InfraError{Err: err}
	}
	defer c.Close()
	stopWrites := backgroundWrites(c, s.Topology.BackgroundWrites.D())
	defer stopWrites()
	res, err := startResource(s.Fenced)
	if err != nil {
		return nil, &InfraError{Err: err}
	}
	defer res.close()

	// A lease lasts at most hold + TTL, so its double grant is proven at
	// most that long after its round: keep the rounds that long, plus one.
	keep := 1 + int((s.Hold.D()+s.Lock.TTL.D()+opt.Every-1)/opt.Every)
	log, err := newSoakLog(dir, s, keep)
	if err != nil {
		return nil, &InfraError{Err: err}
	}
	defer log.abort()
	tlog := withTriggers(log) // what clients do can be a step's moment
	env := &trialEnv{c: c, pids: map[int]int{}, key: s.Lock.Key, clients: s.Clients}
	problems := &problemLog{}
	var workers []*worker
	views := map[int]View{} // of the isolated clients
	var procs []*workerProc // the round's isolated clients
	defer func() {
		for _, p := range procs {
			p.wait(0) // only reached with work left on an error path
		}
	}()
	for p := 1; p <= s.Clients; p++ {
		view, err := clientView(c, s, res, p)
		if err != nil {
			return nil, &InfraError{Err: err}
		}
		if slices.Contains(s.Isolate, p) {
			views[p] = view // its process is started each round
			continue
		}
		tgt := newTarget(view)
		defer tgt.close()
		w := newWorker(p, s, tgt, func(e checker.Event) { tlog.Record(e) }, problems)
		w.res = &resourceClient{addr: view.Resource}
		workers = append(workers, w)
	}
	if err := alignStart(ctx, s.AlignStart.D()); err != nil {
		return nil, err
	}

	d, every := s.Duration.D(), opt.Every
	planned := max(int(opt.For/every), 1)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	stopped := ""
	var stopOnce sync.Once
	found := func(a SoakAnomaly) {
		if opt.Anomaly != nil {
			opt.Anomaly(a)
		}
		if opt.StopOnAnomaly {
			stopOnce.Do(func() { stopped = "anomaly"; stopRun() })
		}
	}
	start := time.Now()
	watchDone := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() { log.watch(watchDone, start, found, opt.Progress, opt.For, planned) })
	stopWatch := sync.OnceFunc(func() { close(watchDone); watch.Wait() })
	defer stopWatch() // on an error path too: it must not write into an aborted folder

	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	copt := CheckOptions(s)
	seenProblems, restored := 0, 0
	pending := "" // why the next round cannot start from the start layout
rounds:
	for k := 0; runCtx.Err() == nil; k++ {
		at := start.Add(time.Duration(k) * every)
		if now := time.Now(); now.After(at) {
			at = now // the round before, its leases or the restore took longer
		}
		if k > 0 && !at.Before(start.Add(opt.For)) {
			break
		}
		// An isolated client that does not start makes its round
		// inconclusive; the soak goes on.
		var failed []string
		for _, p := range s.Isolate {
			delete(env.pids, p) // last round's process is gone
			wp, err := startWorker(workerSpec{Process: p, Scenario: s, View: views[p]}, tlog, os.Stderr)
			if err != nil {
				failed = append(failed, fmt.Sprintf("client %d's process did not start: %v", p, err))
				continue
			}
			procs = append(procs, wp)
			env.pids[p] = wp.pid()
		}
		for _, wp := range procs {
			if err := wp.waitReady(10 * time.Second); err != nil {
				failed = append(failed, fmt.Sprintf("client %d's process: %v", wp.process, err))
			}
		}
		if !sleep(runCtx, time.Until(at)) {
			break
		}
		if now := time.Now(); now.After(at) {
			at = now // starting the clients' processes took longer
		}
		startMono := monoNow()
		log.begin(k+1, startMono)
		for _, wp := range procs {
			if err := wp.start(startMono); err != nil {
				failed = append(failed, fmt.Sprintf("client %d's process did not take the start: %v", wp.process, err))
			}
		}
		for _, f := range failed {
			problems.add("%s", f)
		}
		if pending != "" {
			problems.add("%s", pending) // this round's, not the one before
			pending = ""
		}
		nem, err := newNemesis(env, s.Faults, tlog)
		if err != nil {
			return nil, err
		}
		roundCtx, cancel := context.WithDeadline(runCtx, at.Add(d))
		play(roundCtx, hctx, workers, nem, rng, at)
		cancel()
		nem.healAll(hctx)
		killed, paused := nem.killedClients(), nem.pausedClients()
		for _, wp := range procs {
			if err := wp.finish(s, killed[wp.process], problems); err != nil && !killed[wp.process] && !paused[wp.process] {
				problems.add("client %d: %v", wp.process, err)
			}
		}
		procs = nil
		log.flush()
		faults, notes := nem.evidence()
		all := problems.all()
		cut := runCtx.Err() != nil
		log.end(k+1, faults, notes, all[seenProblems:], cut)
		seenProblems = len(all)
		next := start.Add(time.Duration(k+1) * every)
		if now := time.Now(); now.After(next) {
			next = now
		}
		if cut || !next.Before(start.Add(opt.For)) {
			break // no round after this one
		}
		did, err := rest(runCtx, c, log, k+1, copt, next.Add(-restoreLead), start.Add(opt.For))
		switch {
		case runCtx.Err() != nil:
		case errors.Is(err, errSoakOver):
			break rounds // the leases outlast the soak: no round may start
		case err != nil:
			// The next round would not start from the topology its
			// schedule was written for: it proves nothing.
			pending = fmt.Sprintf("the topology could not be put back after round %d: %v", k+1, err)
		case did != "":
			restored++
			log.addNote(k+1, "topology put back after the round: "+did)
		}
	}
	stopRun()
	for _, w := range workers {
		if err := w.finish(); err != nil {
			problems.add("%v", err)
		}
	}
	if all := problems.all(); len(all) > seenProblems {
		log.addProblems(all[seenProblems:])
	}
	stopWatch()
	if ctx.Err() != nil && stopped == "" {
		stopped = "interrupted"
	}
	out, err := log.close()
	if err != nil {
		return nil, &InfraError{Err: err}
	}
	trials := make([]results.Trial, len(out))
	checks := make([]checker.Result, len(out))
	shown := 0
	for i, r := range out {
		trials[i] = results.Trial{Trial: r.round, Seed: o.Seed, Observed: r.observed, Reason: r.reason,
			WallSeconds: d.Seconds(), Evidence: r.ev, Dir: r.window}
		checks[i] = r.check
		if r.history != nil && (out[shown].history == nil || len(out[shown].check.Anomalies) == 0) {
			shown = i // the first anomalous round kept, else the last kept
		}
	}
	v := newVerdict(s, o.Seed, trials, checks)
	for i, e := range v.Examples {
		v.Examples[i] = "round" + strings.TrimPrefix(e, "trial")
	}
	v.Soak = &results.Soak{PlannedSeconds: opt.For.Seconds(), WallSeconds: time.Since(began).Seconds(),
		Rounds: len(out), Events: log.events, Anomalies: map[string]int{}, PeakRSSBytes: peakRSS(),
		Partial: stopped != "", Stopped: stopped, CheckNote: log.note, EverySeconds: every.Seconds(),
		Restored: restored, Memory: append(log.memory, memorySample(time.Since(start)))}
	for k, n := range v.Anomalies {
		v.Soak.Anomalies[k] = n
	}
	for _, r := range out {
		if len(r.check.Anomalies) > 0 {
			v.Soak.FirstAnomaly = r.round
			if r.window != "" {
				v.Soak.Window = filepath.Join(r.window, checker.HistoryFile)
			}
			break
		}
	}
	if err := dir.WriteJSON("verdict.json", v); err != nil {
		return nil, &InfraError{Err: err}
	}
	if len(out) > 0 {
		r := out[shown]
		tr := TrialResult{Seed: o.Seed, History: r.history, Check: r.check, Evidence: r.ev, Observed: r.observed, Reason: r.reason}
		if err := writeReport(dir, s, v, tr, trials[shown]); err != nil {
			return nil, &InfraError{Err: err}
		}
	}
	return v, nil
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

// A soakRound is one round's record while its anomalies may still come.
type soakRound struct {
	round      int
	first      int   // index of its first event
	startMono  int64 // when its schedule starts
	history    checker.History
	ended, cut bool
	faults     []evidence.Fault
	notes      []string
	problems   []string

	check    checker.Result
	ev       evidence.Evidence
	observed string
	reason   string
	window   string // its folder, with its history, when it has an anomaly
}

// A soakLog records a soak's events: it stamps them, writes them to the
// gzipped history, feeds them to a checker.Stream and keeps the events of
// the rounds whose evidence is not final yet. It is an [eventLog].
type soakLog struct {
	mu     sync.Mutex
	f      *os.File
	zw     *gzip.Writer
	bw     *bufio.Writer
	enc    *json.Encoder
	stream *checker.Stream
	events int
	werr   error // the first write error
	note   string

	rounds    []*soakRound // not yet evaluated, in order
	done      []*soakRound // evaluated
	reported  map[string]bool
	byRound   map[int][]checker.Anomaly // anomalies of rounds not yet evaluated
	prevented map[int][]checker.Anomaly // and their prevented ones
	keep      int                       // ended rounds kept open for late anomalies
	findings  int
	require   []evidence.Requirement
	tolerate  []string

	// With isolated clients, whose events come late, events wait in
	// pending until their round is flushed (ordered).
	ordered bool
	pending checker.History

	dir     *results.RunDir // where rounds with an anomaly get their history
	windows []window        // to write once the lock is let go
	kept    *soakRound      // the last round evaluated without an anomaly, history kept for the report
	shown   bool            // a round with an anomaly keeps its history for the report
	memory  []results.MemorySample
}

var _ eventLog = (*soakLog)(nil)

// newSoakLog writes the history of a soak of s into dir. A round's
// evidence is final once keep more rounds have ended.
func newSoakLog(dir *results.RunDir, s Scenario, keep int) (*soakLog, error) {
	f, err := os.Create(dir.Path(checker.HistoryFileGz))
	if err != nil {
		return nil, err
	}
	zw := gzip.NewWriter(f)
	bw := bufio.NewWriterSize(zw, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &soakLog{f: f, zw: zw, bw: bw, enc: enc, stream: checker.NewStream(CheckOptions(s)),
		require: s.Require, tolerate: s.Tolerate, keep: keep, reported: map[string]bool{}, byRound: map[int][]checker.Anomaly{},
		prevented: map[int][]checker.Anomaly{},
		dir:       dir, ordered: len(s.Isolate) > 0}, nil
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

// add indexes e, writes it, checks it and keeps it with its round; l.mu is
// held.
func (l *soakLog) add(e checker.Event) {
	e.Index = l.events
	l.events++
	if err := l.enc.Encode(&e); err != nil && l.werr == nil {
		l.werr = err
	}
	if err := l.stream.Add(e); err != nil && l.note == "" {
		l.note = err.Error() // events come in time order, so it cannot happen
	}
	if n := len(l.rounds); n > 0 {
		l.rounds[n-1].history = append(l.rounds[n-1].history, e)
	}
}

// History returns the events of the rounds kept (the current one and a few
// before it): enough for the nemesis to tell who holds the lock.
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

// begin starts round k, whose schedule starts at startMono.
func (l *soakLog) begin(k int, startMono int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rounds = append(l.rounds, &soakRound{round: k, first: l.events, startMono: startMono})
}

// end closes round k with the nemesis's record, and evaluates the rounds
// that ended long enough ago that no anomaly can still be traced to them.
func (l *soakLog) end(k int, faults []evidence.Fault, notes, problems []string, cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := findRound(l.rounds, k); r != nil {
		r.ended, r.cut, r.faults, r.notes, r.problems = true, cut, faults, notes, problems
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

// poll reports the anomalies proven since the last poll, each with its
// round, and evaluates the rounds that can no longer get one.
func (l *soakLog) poll(since time.Time, found func(SoakAnomaly)) {
	l.mu.Lock()
	var fresh []SoakAnomaly
	l.stream.Decide()
	l.tracePrevented(l.stream.Prevented())
	for _, a := range l.stream.Anomalies() {
		id := fmt.Sprint(a.Kind, a.Ops)
		if l.reported[id] {
			continue
		}
		l.reported[id] = true
		r := l.roundOf(a)
		l.attach(r, a)
		l.findings++
		fresh = append(fresh, SoakAnomaly{Round: r, Found: time.Since(since), Anomaly: a})
	}
	l.mu.Unlock()
	for _, a := range fresh {
		found(a)
	}
}

// tracePrevented traces the prevented anomalies not seen yet to their
// rounds; they are evidence (a fenced write refused), not anomalies.
func (l *soakLog) tracePrevented(list []checker.Anomaly) {
	for _, a := range list {
		id := fmt.Sprint("prevented ", a.Kind, a.Ops)
		if l.reported[id] {
			continue
		}
		l.reported[id] = true
		k := l.roundOf(a)
		if r := findRound(l.done, k); r != nil {
			r.check.Prevented = append(r.check.Prevented, a) // too late for its requirements
			continue
		}
		l.prevented[k] = append(l.prevented[k], a)
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

// attach adds a to round k's anomalies: kept for its evaluation, or added
// to a round already evaluated (a lease that outlived the rounds kept).
func (l *soakLog) attach(k int, a checker.Anomaly) {
	if r := findRound(l.done, k); r != nil {
		r.check.Anomalies = append(r.check.Anomalies, a)
		r.check.Verdict = checker.Illegal
		r.observed, r.reason = evidence.Observe(r.check, r.ev, l.tolerate)
		return
	}
	l.byRound[k] = append(l.byRound[k], a)
}

// roundOf is the round the first operation of a was recorded in.
func (l *soakLog) roundOf(a checker.Anomaly) int {
	first := slices.Min(append([]int{l.events}, a.Ops...))
	k := 1
	for _, r := range slices.Concat(l.done, l.rounds) {
		if r.first <= first {
			k = r.round
		}
	}
	return k
}

// settle evaluates ended rounds while more than l.keep ended rounds are
// kept: a lease that began in a round ends (and its double grant is proven)
// within a few rounds.
func (l *soakLog) settle() {
	defer l.writeWindows()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Fenced writes are evidence: a round is not summed up before the
	// stream has judged its last events.
	l.stream.Decide()
	l.tracePrevented(l.stream.Prevented())
	ended := 0
	for _, r := range l.rounds {
		if r.ended {
			ended++
		}
	}
	for ended > l.keep && len(l.rounds) > 0 && l.rounds[0].ended {
		l.evaluate(l.rounds[0], checker.Result{})
		l.done = append(l.done, l.rounds[0])
		l.rounds = l.rounds[1:]
		ended--
	}
}

// evaluate sums up round r with the anomalies traced to it; final is the
// stream's closing result, for what only the end can tell.
func (l *soakLog) evaluate(r *soakRound, final checker.Result) {
	res := checker.Result{Origin: final.Origin, Anomalies: l.byRound[r.round], Prevented: l.prevented[r.round]}
	delete(l.byRound, r.round)
	delete(l.prevented, r.round)
	res.Verdict = checker.Ok
	if len(res.Anomalies) > 0 {
		res.Verdict = checker.Illegal
	}
	r.ev = evidence.Evaluate(evidence.Input{History: r.history, Result: res, Start: r.startMono,
		Faults: r.faults, Require: l.require, Notes: r.notes, Problems: r.problems})
	r.check = res
	r.observed, r.reason = evidence.Observe(res, r.ev, l.tolerate)
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

// close ends the stream, traces its last anomalies to their rounds,
// evaluates every round left, writes the end of the history and returns
// the rounds of the verdict: every round played, and a round cut short
// only if it has an anomaly. The history file stays in place.
func (l *soakLog) close() ([]*soakRound, error) {
	l.flush() // nothing should be left; nothing may be lost either
	res, cerr := l.stream.Close()
	l.mu.Lock()
	l.tracePrevented(res.Prevented)
	for _, a := range res.Anomalies {
		id := fmt.Sprint(a.Kind, a.Ops)
		if !l.reported[id] {
			l.reported[id] = true
			l.attach(l.roundOf(a), a)
		}
	}
	if cerr != nil && l.note == "" {
		l.note = cerr.Error()
	}
	for _, r := range l.rounds {
		l.evaluate(r, res)
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
