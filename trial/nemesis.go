package trial

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/scenario"
)

// A trialEnv is what the nemesis can reach: the cluster, the process ids
// of isolated clients, and the lock's key, whose presence on a node is
// read before and after the node restarts.
type trialEnv struct {
	c       *cluster.Cluster
	pids    map[int]int
	key     string
	clients int
	// recorded is true when every request the lock makes is an operation
	// in the history (a built-in lock; a lock program may renew unseen).
	recorded bool
}

// An eventLog is where the nemesis records its events and reads who holds
// the lock: a trial's [checker.Recorder], or a soak's streaming log.
type eventLog interface {
	Record(checker.Event) checker.Event
	History() checker.History
}

// A nemesis plays a trial's fault schedule and keeps the record of what
// happened to each step, for the trial's evidence.
type nemesis struct {
	env   *trialEnv
	steps []scenario.Step
	rec   eventLog
	start time.Time

	faults []faults.Fault
	nodes  []*cluster.Node

	seeds   []uint64        // of aimed steps' random choices
	moments []*moment       // of steps that waited for theirs (see trigger.go)
	early   []*moment       // armed when the nemesis was built: of steps due at the start (see armEarly)
	came    []time.Duration // from the start, when a step that waited for its moment fired (plus any delay); its heal is due For after it
	runCtx  context.Context
	heals   sync.WaitGroup // aimed steps' heals, which their injects start
	// settled, if set, is called once every step has fired (or missed its
	// moment) and healed before the trial's end (see scenario.Early).
	settled func()

	mu     sync.Mutex
	record []evidence.Fault
	live   []bool // injected and not yet healed, by step
	// valueBefore is the lock key's value on a Redis node when its step
	// fired ("" if absent or not a string), by step.
	valueBefore []string
	injected    []chan struct{} // closed once the step's inject returned
	notes       []string
}

// An action is an inject or a heal at a point in the trial.
type action struct {
	at   time.Duration
	heal bool
	step int
}

// newNemesis builds the faults of steps; a step that names a client that
// is not isolated or a node the topology lacks is an [scenario.ErrBadScenario].
func newNemesis(env *trialEnv, steps []scenario.Step, rec eventLog) (*nemesis, error) {
	m := newSchedule(env, steps, rec)
	resetMoments(rec)
	for i, s := range steps {
		if s.Aimed() {
			// The target is chosen when the step fires (see aim).
			desc := s.Fault + " " + s.Node
			if !scenario.ClientFault(s.Fault) {
				f, err := s.NewFault(nil)
				if err != nil {
					return nil, err
				}
				m.faults[i], desc = f, faults.Describe(f, nil)+" "+s.Node
			}
			m.record[i] = evidence.Fault{Step: i, Fault: s.Fault, Target: s.Node, Aim: s.Node, Desc: desc}
			continue
		}
		f, err := s.NewFault(env.pids)
		if err != nil {
			return nil, err
		}
		m.faults[i] = f
		if !scenario.ClientFault(s.Fault) {
			if m.nodes[i], err = env.c.Node(s.Node); err != nil {
				return nil, fmt.Errorf("%w: %v", scenario.ErrBadScenario, err)
			}
		}
		desc := faults.Describe(f, m.nodes[i])
		if m.nodes[i] == nil {
			desc = strings.TrimSuffix(desc, fmt.Sprintf(" pid %d", env.pids[s.Client])) + " " + s.Target()
		}
		m.record[i] = evidence.Fault{Step: i, Fault: s.Fault, Target: s.Target(), Desc: desc}
	}
	m.armEarly()
	return m, nil
}

// armEarly arms, as the nemesis is built, before any client runs, the
// moments of the steps due at the trial's start (at 0s, no jitter). The
// schedule's goroutine reaches such a step only after the clients have
// started, and an isolated client reads the resource within a millisecond
// of the start: its event came before the step waited for it, and the
// moment was missed (watchdog-pause, 3 trials of 40).
func (m *nemesis) armEarly() {
	tl, ok := m.rec.(*triggerLog)
	if !ok {
		return
	}
	for i, s := range m.steps {
		if s.When != nil && s.At.D() == 0 && s.Jitter == 0 {
			m.early[i] = tl.arm(*s.When)
		}
	}
}

// newSchedule returns a nemesis for steps with nothing built yet.
func newSchedule(env *trialEnv, steps []scenario.Step, rec eventLog) *nemesis {
	m := &nemesis{env: env, steps: steps, rec: rec, faults: make([]faults.Fault, len(steps)),
		nodes: make([]*cluster.Node, len(steps)), record: make([]evidence.Fault, len(steps)), live: make([]bool, len(steps)), valueBefore: make([]string, len(steps)),
		injected: make([]chan struct{}, len(steps)), seeds: make([]uint64, len(steps)), moments: make([]*moment, len(steps)),
		early: make([]*moment, len(steps)), came: make([]time.Duration, len(steps))}
	for i := range steps {
		m.injected[i] = make(chan struct{})
	}
	return m
}

// inPlace returns a channel closed once every step due by the scenario's
// start_after (at or before it, on no moment) has been injected, or nil
// when there is none: start_after is the delay "until a fault is in
// place", and on a busy machine an inject can take longer than the delay,
// so that the first grant came before the partition it was to meet
// (cluster-minority-primary, under load: the attack never met the lock).
func (m *nemesis) inPlace(ctx context.Context, workers []*worker) <-chan struct{} {
	if len(workers) == 0 {
		return nil
	}
	due := workers[0].s.StartAfter.D()
	var wait []chan struct{}
	for i, st := range m.steps {
		if due > 0 && st.When == nil && st.At.D() <= due {
			wait = append(wait, m.injected[i])
		}
	}
	if len(wait) == 0 {
		return nil
	}
	done := make(chan struct{})
	go func() {
		for _, c := range wait {
			select {
			case <-c:
			case <-ctx.Done(): // the trial ended first
				return
			}
		}
		close(done)
	}()
	return done
}

// setStart sets the trial's start, from which notes are timed; call it
// before the watchers start (run sets it too).
func (m *nemesis) setStart(start time.Time) {
	m.mu.Lock()
	m.start = start
	m.mu.Unlock()
}

// run plays the schedule from start until runCtx ends. Each action runs in
// its own goroutine, so a fault that takes time (a delayed restart) does
// not hold up the next one, and it runs under ctx, not runCtx: a fault
// injected before the end of the trial completes (a node still restarting
// comes back) before run returns.
func (m *nemesis) run(runCtx, ctx context.Context, rng *rand.Rand, start time.Time) {
	m.mu.Lock()
	m.start, m.runCtx = start, runCtx
	m.mu.Unlock()
	var plan []action
	for i, s := range m.steps {
		at := s.At.D()
		if s.Jitter > 0 {
			at += time.Duration(rng.Int64N(int64(s.Jitter)))
		}
		m.record[i].At = at.Seconds()
		plan = append(plan, action{at: at, step: i})
		if s.For > 0 && !s.Aimed() && s.When == nil { // an aimed step heals after it fires: see inject; one with When, after its moment
			plan = append(plan, action{at: at + s.For.D(), heal: true, step: i})
		}
	}
	for i, s := range m.steps {
		if s.Aimed() {
			m.seeds[i] = rng.Uint64()
		}
	}
	sort.SliceStable(plan, func(i, j int) bool { return plan[i].at < plan[j].at })
	var wg sync.WaitGroup
	for _, a := range plan {
		if !sleep(runCtx, time.Until(start.Add(a.at))) {
			break
		}
		switch {
		case a.heal:
			wg.Go(func() { m.healDue(ctx, a.step, a.at) })
		case m.steps[a.step].When != nil:
			wg.Go(func() { m.injectAtMoment(ctx, a.step) })
		default:
			wg.Go(func() { m.inject(ctx, a.step) })
		}
	}
	wg.Wait()
	m.heals.Wait()
	if m.settled != nil && runCtx.Err() == nil {
		m.settled()
	}
}

// since returns the seconds from the start of the trial to now.
func (m *nemesis) since() *float64 {
	s := time.Since(m.start).Seconds()
	return &s
}

// inject injects step i, then observes its effect, and the lock's key on
// its node before and after (see keyAfterHeal).
func (m *nemesis) inject(ctx context.Context, i int) {
	st := m.steps[i]
	injected := sync.OnceFunc(func() { close(m.injected[i]) })
	defer injected()
	if st.Aimed() {
		target, how, err := m.aim(ctx, i, rand.New(rand.NewPCG(m.seeds[i], uint64(i))))
		m.mu.Lock()
		r := &m.record[i]
		if err != nil {
			r.Fired, r.Error = m.since(), err.Error()
			m.mu.Unlock()
			return
		}
		r.Target = target
		r.Desc = strings.Replace(r.Desc, st.Node, target, 1) + " (" + how + ")"
		due := time.Duration(r.At*float64(time.Second)) + st.For.D()
		if st.When != nil {
			due = m.came[i] + st.For.D()
		}
		m.mu.Unlock()
		if st.For > 0 {
			// Healed from here, so a heal can never come before its target
			// is known; at its time (or its moment's), as a named step's,
			// not after the checks.
			m.healLater(ctx, i, due)
		}
	}
	f, n := m.faults[i], m.nodes[i]
	m.mu.Lock()
	desc, target := m.record[i].Desc, m.record[i].Target
	m.mu.Unlock()
	var before string
	switch {
	case n != nil && (cluster.IsEtcdMember(n) || cluster.IsPostgresNode(n) || cluster.IsZooKeeperMember(n)):
		// Every member holds the key alike once committed (a PostgreSQL
		// advisory lock is no key at all): whether a client held the
		// lock, by the history, is what can be said.
		before = m.anyHolds()
	case n != nil && n.Proc != nil: // a Redis node
		var value string
		// Read with keyValueOn's own bounds: a 200ms bound once left a healthy
		// node's key unknown under load, and a trial whose double grant showed
		// the attack met the lock inconclusive.
		if !m.silenced(i, n) {
			before, value = keyValueOn(ctx, n, m.env.key)
		}
		m.mu.Lock()
		m.valueBefore[i] = value
		m.mu.Unlock()
	case scenario.ClientFault(st.Fault):
		before = m.clientHolds(target)
	default:
		if _, p, ok := scenario.ClientLinkOf(target); ok { // a client's own link: did it hold the lock?
			before = m.clientHolds(fmt.Sprintf("c%d", p))
		}
	}
	m.rec.Record(checker.Event{Process: -1, Type: checker.Invoke, F: checker.FNemesis, Value: checker.TextValue(desc), Node: target})
	m.mu.Lock()
	m.live[i] = true
	m.mu.Unlock()
	fired := m.since()
	err := f.Inject(ctx, n)
	injected()
	m.momentIn(i)
	e := checker.Event{Process: -1, Type: checker.Info, F: checker.FNemesis, Value: checker.TextValue(desc), Node: target}
	if err != nil {
		e.Type, e.Error = checker.Fail, err.Error()
	}
	m.rec.Record(e)
	var effect, noEffect, after string
	var effective *float64
	if err == nil {
		vctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if effect, err = faults.Verify(vctx, f, n); err != nil {
			effect, noEffect, err = "", err.Error(), nil
		} else {
			effective = m.since()
		}
		cancel()
		if !keyAfterHeal(st.Fault) {
			after = keyAfter(ctx, n, m.env.key, m.valueOf(i))
		}
		if after != "" && noEffect == "" {
			effect = strings.TrimPrefix(effect+", lock key "+after, ", ")
		}
		if effect != "" {
			m.observe(target, target+" "+effect)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &m.record[i]
	r.Fired, r.Effective, r.Effect, r.NoEffect, r.KeyBefore, r.KeyAfter = fired, effective, effect, noEffect, before, after
	if l, ok := f.(interface{ LostBytes() (int64, bool) }); ok && err == nil {
		if n, ok := l.LostBytes(); ok {
			r.Lost = &n
		}
	}
	if err != nil && ctx.Err() == nil {
		r.Error = err.Error()
	}
}

// healSlack is how late a heal may begin after it was due before the
// trial no longer plays the schedule it claims.
const healSlack = 100 * time.Millisecond

// healDue heals step i at its `for`, due at due from the start of the
// trial; a heal that comes due while the inject is still running waits for
// it (healing half a fault undoes nothing) and is recorded as late.
func (m *nemesis) healDue(ctx context.Context, i int, due time.Duration) {
	why := "the heal itself woke late (a busy machine)"
	select {
	case <-m.injected[i]:
	default:
		why = "its inject took until then"
		<-m.injected[i]
	}
	m.healAt(ctx, i, due, why)
}

// healLater heals step i at due from the start of the trial, as healDue
// does, unless the trial ends first (then healAll heals it): for steps
// whose heal is known only once they fire (aimed, or waiting for a moment).
func (m *nemesis) healLater(ctx context.Context, i int, due time.Duration) {
	m.heals.Go(func() {
		if sleep(m.runCtx, time.Until(m.start.Add(due))) {
			m.healDue(ctx, i, due)
		}
	})
}

// healAt heals step i, due at due, and records when it was due and, if it
// begins more than healSlack after that, that it was late and why.
func (m *nemesis) healAt(ctx context.Context, i int, due time.Duration, why string) {
	dueS := due.Seconds()
	m.mu.Lock()
	r := &m.record[i]
	r.HealDue = &dueS
	if late := time.Since(m.start.Add(due)); late > healSlack {
		r.HealLate = fmt.Sprintf("began %v late: %s", late.Round(time.Millisecond), why)
		r.SeenBy = m.seenBy(i, r.Target)
		r.Ensemble = m.ensemble(i)
	}
	m.mu.Unlock()
	m.heal(ctx, i)
}

// unshared lists the faults that change nothing but how a Redis node
// answers: on a node nothing else talks to, only its clients see them.
var unshared = []string{"partition", "latency", "drop-replies", "reset", "kill", "pause"}

// seenBy returns the clients through whose operations alone step i's
// fault, on target, can be seen (evidence.Fault.SeenBy), or nil when
// something else may see it: a replica, a sentinel, a peer, a lock's
// requests that are not in the history, a clock, a disk.
func (m *nemesis) seenBy(i int, target string) []int {
	if !m.env.recorded || m.env.c == nil || !slices.Contains(unshared, m.steps[i].Fault) {
		return nil
	}
	name, p, link := scenario.ClientLinkOf(target)
	if !link {
		name = target
	}
	if n, err := m.env.c.Node(name); err != nil || !m.env.c.Unshared(n) {
		return nil
	}
	if link {
		return []int{p}
	}
	ps := make([]int, m.env.clients)
	for j := range ps {
		ps[j] = j + 1
	}
	return ps
}

// stopsMember lists the faults that take a consensus member out of service
// without touching its data: it is down or frozen until the heal.
var stopsMember = []string{"kill", "pause"}

// ensemble returns the names of the etcd or ZooKeeper ensemble whose member
// step i killed or froze (evidence.Fault.Ensemble), or nil for any other
// fault: whether the rest kept a quorum while its heal was late is the
// evidence's to decide, from every fault's record. Only under a built-in
// lock, whose clients are given every member: a lock program may talk to
// one member alone, and wait for that one's return.
func (m *nemesis) ensemble(i int) []string {
	n := m.nodes[i]
	if !m.env.recorded || m.env.c == nil || n == nil || !slices.Contains(stopsMember, m.steps[i].Fault) {
		return nil
	}
	for _, members := range [][]*cluster.Node{m.env.c.Etcd, m.env.c.ZooKeeper} {
		if slices.Contains(members, n) {
			names := make([]string, len(members))
			for j, o := range members {
				names[j] = o.Name
			}
			return names
		}
	}
	return nil
}

// heal heals step i if it is injected and not healed yet; the node of a
// fault that silenced it (keyAfterHeal) is asked for the lock's key once it
// is back.
func (m *nemesis) heal(ctx context.Context, i int) {
	m.mu.Lock()
	live := m.live[i]
	m.live[i] = false
	m.mu.Unlock()
	if !live {
		return
	}
	f, n, st := m.faults[i], m.nodes[i], m.steps[i]
	m.mu.Lock()
	desc, target := "heal "+m.record[i].Desc, m.record[i].Target
	m.mu.Unlock()
	m.rec.Record(checker.Event{Process: -1, Type: checker.Invoke, F: checker.FNemesis, Value: checker.TextValue(desc), Node: target})
	err := f.Heal(ctx, n)
	e := checker.Event{Process: -1, Type: checker.Info, F: checker.FNemesis, Value: checker.TextValue(desc), Node: target}
	if err != nil {
		e.Type, e.Error = checker.Fail, err.Error()
	}
	m.rec.Record(e)
	healed := m.since()
	var after string
	if err == nil && keyAfterHeal(st.Fault) && n != nil && (cluster.IsEtcdMember(n) || cluster.IsPostgresNode(n) || cluster.IsZooKeeperMember(n)) {
		m.observe(target, target+" "+backNote[st.Fault])
	} else if err == nil && keyAfterHeal(st.Fault) && n != nil && n.Proc != nil {
		after = keyAfter(ctx, n, m.env.key, m.valueOf(i))
		state := after
		if state == "" {
			state = "unknown"
		}
		m.observe(target, target+" "+backNote[st.Fault]+", lock key "+state)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &m.record[i]
	r.Healed = healed
	if after != "" {
		r.KeyAfter = after
	}
	if err != nil {
		r.HealError = err.Error()
	}
}

// healAll heals every fault still in place, newest step first, so no node
// stays down and no client frozen while the trial winds up, and thaws
// every isolated client.
func (m *nemesis) healAll(ctx context.Context) {
	for i := len(m.steps) - 1; i >= 0; i-- {
		m.heal(ctx, i)
	}
	for _, pid := range m.env.pids {
		_ = faults.ResumePID(pid)
	}
}

// observe records an effect seen on target as a nemesis note in the history
// and in the trial's notes.
func (m *nemesis) observe(target, what string) {
	m.rec.Record(checker.Event{Process: -1, Type: checker.Info, F: checker.FNemesis, Value: checker.TextValue(checker.ObservedNote + what), Node: target})
	m.mu.Lock()
	defer m.mu.Unlock()
	// start is set by run, which a watcher may race at the trial's start.
	m.notes = append(m.notes, fmt.Sprintf("+%.3fs %s", time.Since(m.start).Seconds(), what))
}

// pausedClients returns the clients a pause-client step froze for the rest
// of the trial, or a kill-client step killed, with the effect observed: a
// lock that never answered one of them is explained by the fault.
func (m *nemesis) pausedClients() map[int]bool {
	return m.stoppedClients(func(s scenario.Step) bool { return s.Fault == "pause-client" && s.For == 0 })
}

// killedClients returns the clients a kill-client step killed, with its
// effect observed: their processes were meant to die.
func (m *nemesis) killedClients() map[int]bool {
	return m.stoppedClients(func(s scenario.Step) bool { return s.Fault == "kill-client" })
}

func (m *nemesis) stoppedClients(match func(scenario.Step) bool) map[int]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int]bool{}
	for i, r := range m.record {
		if match(m.steps[i]) && r.Fired != nil && r.Error == "" && r.NoEffect == "" {
			if c, ok := scenario.ClientOf(r.Target); ok {
				out[c] = true
			}
		}
	}
	return out
}

// evidence returns the record of every step and the notes.
func (m *nemesis) evidence() ([]evidence.Fault, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.record), slices.Clone(m.notes)
}

// clientHolds says whether the client a target such as "c1" names holds
// the lock now, by the history so far: "held" or "absent".
func (m *nemesis) clientHolds(target string) string {
	p, ok := scenario.ClientOf(target)
	if ok && slices.Contains(checker.Holders(m.rec.History(), monoNow()), p) {
		return evidence.KeyHeld
	}
	return evidence.KeyAbsent
}

// anyHolds says whether any client holds the lock now, by the history so
// far: "held" or "absent".
func (m *nemesis) anyHolds() string {
	if len(checker.Holders(m.rec.History(), monoNow())) > 0 {
		return evidence.KeyHeld
	}
	return evidence.KeyAbsent
}

// keyAfterHeal reports whether a fault kind leaves its node unable to
// answer, or its lock's key not yet written, until healed (kill, pause;
// drop-replies, whose dropped acquire wrote it while replies were lost),
// so the key on it is read once the node is back; after any other fault on
// a node, once it took effect.
func keyAfterHeal(kind string) bool { _, ok := backNote[kind]; return ok }

// backNote says how a healed fault's node is back, before its key is read.
var backNote = map[string]string{"kill": "back up", "pause": "back up", "drop-replies": "replies flow again"}

// silenced reports whether an earlier step still in place keeps node n
// from answering (killed, paused, its replies dropped): its key is then
// left unknown at once rather than hold step i back from its time.
func (m *nemesis) silenced(i int, n *cluster.Node) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for j, live := range m.live {
		if live && j != i && m.nodes[j] == n && keyAfterHeal(m.steps[j].Fault) {
			return true
		}
	}
	return false
}

// valueOf returns the lock key's value on step i's node when it fired.
func (m *nemesis) valueOf(i int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.valueBefore[i]
}

// keyValueOn is keyOn with who holds the key: a string key's value, or a
// hash key's fields (the reentrant lock's holder ids), comma-separated.
func keyValueOn(ctx context.Context, n *cluster.Node, key string) (state, value string) {
	state = keyOn(ctx, n, key)
	if state != evidence.KeyHeld {
		return state, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: n.Proc.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	defer rdb.Close()
	value, err := rdb.Get(ctx, key).Result()
	if err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") {
		fields, _ := rdb.HKeys(ctx, key).Result()
		slices.Sort(fields)
		value = strings.Join(fields, ",")
	}
	return state, value
}

// keyAfter returns the key's state on n after a fault: held only by the
// value it had before (a key lost and taken again by another holder, as
// a slow restart allows, is absent for the one who held it).
func keyAfter(ctx context.Context, n *cluster.Node, key, before string) string {
	state, value := keyValueOn(ctx, n, key)
	if state == evidence.KeyHeld && before != "" && value != before {
		return evidence.KeyAbsent
	}
	return state
}

// keyOn reads whether key exists on node n, through its own address (not
// its proxy, which a fault may cut): "held", "absent", or "" if the node
// does not answer in time.
func keyOn(ctx context.Context, n *cluster.Node, key string) string {
	if n == nil || n.Proc == nil || cluster.IsEtcdMember(n) || cluster.IsPostgresNode(n) || cluster.IsZooKeeperMember(n) {
		return "" // an etcd member, a PostgreSQL node or a ZooKeeper member speaks no RESP
	}
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: n.Proc.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	defer rdb.Close()
	k, err := rdb.Exists(ctx, key).Result()
	switch {
	case err != nil:
		return ""
	case k > 0:
		return evidence.KeyHeld
	}
	return evidence.KeyAbsent
}

// watchSentinels notes, until ctx ends, each time the sentinels name a new
// master: the moment a failover took effect for clients.
func (m *nemesis) watchSentinels(ctx context.Context) {
	c := m.env.c
	if len(c.Sentinels) == 0 {
		return
	}
	last := ""
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if now, ok := sentinelsMaster(ctx, c); ok && now != last {
			if last != "" {
				m.observe(now, fmt.Sprintf("sentinels switched master from %s to %s", last, now))
			}
			last = now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchSlot, in a Redis Cluster, notes in the history which primary serves
// the lock key's slot at the start and whenever that changes, until ctx
// ends.
func (m *nemesis) watchSlot(ctx context.Context) {
	c := m.env.c
	if !c.IsRedisCluster() {
		return
	}
	slot, last := cluster.Slot(m.env.key), ""
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if owner, err := c.KeyOwner(ctx, m.env.key); err == nil && owner.Name != last {
			what := fmt.Sprintf("slot %d (key %s) served by %s", slot, m.env.key, owner.Name)
			if last != "" {
				what += ", was " + last
			}
			m.observe(owner.Name, what)
			last = owner.Name
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
