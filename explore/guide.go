package explore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
	"github.com/lockpick/lockpick/scenario"
	"github.com/lockpick/lockpick/trial"
)

// The search strategies: guided draws most schedules as changes of the
// ones that came closest to breaking the lock; random draws each one
// afresh, as a function of the seed and its index alone.
const (
	StrategyGuided = "guided"
	StrategyRandom = "random"
)

// Strategies lists the search strategies, the default first.
func Strategies() []string { return []string{StrategyGuided, StrategyRandom} }

const (
	poolSize = 8   // the closest schedules a guided search draws around
	warmup   = 4   // random's schedules a guided search plays before the first change (see warmDraw)
	fresh    = 0.3 // the share of random draws after the warm-up
)

// A guide keeps the schedules that came closest to breaking the lock, with
// their scores, for a guided search to draw around, and the behaviours
// the search has seen (see features).
type guide struct {
	mu   sync.Mutex
	pool []scored
	// toAnchor are the schedules with a client fault that freezes or cuts
	// off a client and waits for no moment, oldest first: each is anchored
	// once (see nextAnchor), whatever its trial shows (the anchor plays the
	// pause alone, without the faults that may make the trial
	// inconclusive). A schedule whose fault names its client is anchored
	// as it is drawn (see anchorFirst); the others are queued here once
	// their trial shows which client the fault hit.
	toAnchor []scored
	queued   map[int]bool // the schedules, by index, queued to be anchored
	// held is the schedule drawn with a pause or cut of a client it names
	// (one at most), played right after that fault's anchor, which goes
	// first (see anchorFirst).
	held   []Schedule
	stride int // the step between the search's schedule indices (a shard's count); 0 means 1
	warmed int // the random schedules the warm-up has drawn (see warmDraw)
	// cover are the schedules that draw the fault kinds the warm-up did
	// not (Generator.covering), played in turn after it.
	cover []Schedule
	seen  map[string]bool
	kinds map[string]*tally // closeness by fault kind, for the fresh draws (see weights)
	all   tally             // closeness over every conclusive trial
}

// A tally sums the closeness of the trials a fault kind was in.
type tally struct {
	n   int
	sum float64
}

// maxNovelty caps the points a trial earns for new behaviours, a quarter
// point each: early in a search nearly every trial shows some, and at half
// a point each, up to 1, the warm-up's schedules filled the pool for being
// new and no later change, however close, displaced them (an etcd search
// kept 1.3-1.9 for its first schedules against 0.3-0.9 for its changes).
const maxNovelty = 0.5

// learn scores a trial of sc, offers it to the pool and returns its score:
// its closeness, plus a quarter point for each behaviour no earlier trial
// showed (a fault kind that found the key held and left it absent, a
// takeover, a refused stale write...), as coverage steers a fuzzer, at
// most maxNovelty.
func (g *guide) learn(sc Schedule, tr trial.TrialResult, ttl time.Duration) float64 {
	m := checker.MarginsOf(tr.History)
	score := closeness(tr, m, ttl, sc.Hold.D())
	if tr.Observed != evidence.Inconclusive {
		g.count(sc, score)
		score += min(maxNovelty, 0.25*float64(g.novel(features(tr, m))))
	}
	met, missed, hit := metTheLock(tr)
	s := scored{sc: sc, score: score, met: met, missed: missed, hit: hit}
	g.add(s)
	g.queue(s)
	return score
}

// queue puts s in toAnchor if its schedule has a silencing client fault
// whose client is known (see silencingGroup) and was not queued before.
func (g *guide) queue(s scored) {
	if silencingGroup(groupSteps(s.sc.Faults, s)) < 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mark(s.sc.Index) {
		g.toAnchor = append(g.toAnchor, s)
	}
}

// mark records that schedule i's client fault is anchored, or will be,
// and reports whether it was not before; g.mu is held.
func (g *guide) mark(i int) bool {
	if g.queued[i] {
		return false
	}
	if g.queued == nil {
		g.queued = map[int]bool{}
	}
	g.queued[i] = true
	return true
}

// hold keeps sc, drawn with a client fault that anchorFirst plays first,
// to be played next, as schedule sc.Index; its pause is anchored already.
func (g *guide) hold(sc Schedule) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mark(sc.Index)
	g.held = append(g.held, sc)
}

// nextHeld takes the held schedule, or reports that none is held.
func (g *guide) nextHeld() (Schedule, bool) { return take(g, &g.held) }

// after returns the index of the schedule the search plays after i.
func (g *guide) after(i int) int { return i + max(1, g.stride) }

// drawnHits maps each step of sc that freezes or cuts off a client it
// names to that client (see drawnClient).
func drawnHits(sc Schedule, s scenario.Scenario) map[int]int {
	hit := map[int]int{}
	for i, st := range sc.Faults {
		if p := drawnClient(st, s); p > 0 {
			hit[i] = p
		}
	}
	return hit
}

// drawnClient returns the client a client fault will hit, as far as its
// step says: a pause of client p, a cut of p's own links (see clientOf), a
// pause of the holder where only one client can be paused; else 0.
func drawnClient(st scenario.Step, s scenario.Scenario) int {
	if st.Fault == "pause-client" && st.Node == scenario.AimHolder && len(s.Isolate) == 1 {
		return s.Isolate[0]
	}
	return clientOf(st.Fault, st.Target())
}

// warmDraw returns the index of the next random schedule of the warm-up
// (the random search's first warmup, in order), or reports that the
// warm-up is over.
func (g *guide) warmDraw() (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.warmed >= warmup {
		return 0, false
	}
	g.warmed++
	return g.warmed - 1, true
}

// nextAnchor takes the oldest schedule waiting to have its silencing
// client fault anchored, or reports that none waits.
func (g *guide) nextAnchor() (scored, bool) { return take(g, &g.toAnchor) }

// nextCover takes the next schedule of cover, or reports that none is left.
func (g *guide) nextCover() (Schedule, bool) { return take(g, &g.cover) }

// take removes and returns the first of q, one of g's queues, under g's
// lock, or reports that q is empty.
func take[T any](g *guide, q *[]T) (T, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var first T
	if len(*q) == 0 {
		return first, false
	}
	first, *q = (*q)[0], (*q)[1:]
	return first, true
}

// silencingGroup returns the index of the first group that froze or cut
// off a client and waits for no moment (see anchorable), or -1.
func silencingGroup(groups []group) int {
	return slices.IndexFunc(groups, func(gr group) bool {
		return gr.client > 0 && gr.steps[0].When == nil && slices.Contains(silencing, gr.kind())
	})
}

// count adds a conclusive trial's closeness to the tally of each fault
// kind its schedule drew, and to the tally of all.
func (g *guide) count(sc Schedule, closeness float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.kinds == nil {
		g.kinds = map[string]*tally{}
	}
	g.all.n++
	g.all.sum += closeness
	var done []string
	for _, st := range sc.Faults {
		if slices.Contains(done, st.Fault) {
			continue
		}
		done = append(done, st.Fault)
		t := g.kinds[st.Fault]
		if t == nil {
			t = &tally{}
			g.kinds[st.Fault] = t
		}
		t.n++
		t.sum += closeness
	}
}

const (
	priorTrials = 2   // a kind's mean closeness starts as the mean of all, worth this many trials
	weightFloor = 0.3 // no kind is drawn less than this share of the average kind
)

// weights returns how often a fresh draw picks each of kinds: in
// proportion to the mean closeness of the trials it was in (shrunk toward
// the mean of all while it has few), and never below weightFloor of the
// average, so a kind that scored nothing early is still drawn; nil (every
// kind alike) before any trial came close.
func (g *guide) weights(kinds []string) []float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.all.sum <= 0 {
		return nil
	}
	mean := g.all.sum / float64(g.all.n)
	w := make([]float64, len(kinds))
	total := 0.0
	for i, k := range kinds {
		t := tally{}
		if g.kinds[k] != nil {
			t = *g.kinds[k]
		}
		w[i] = (t.sum + priorTrials*mean) / (float64(t.n) + priorTrials)
		total += w[i]
	}
	for i := range w {
		w[i] = max(w[i], weightFloor*total/float64(len(w)))
	}
	return w
}

// metTheLock returns the steps of a trial's schedule that fired while the
// lock's key was held where they hit (a node holding the key, a client
// holding the lock): the faults that met the lock, which a change of the
// schedule works on first; the client faults that missed it (the client
// they froze or cut off held no lock then); and, for every client fault
// that fired, the client it hit, to whose next hold a change may anchor it.
func metTheLock(tr trial.TrialResult) (met, missed map[int]bool, hit map[int]int) {
	met, missed, hit = map[int]bool{}, map[int]bool{}, map[int]int{}
	for _, f := range tr.Evidence.Faults {
		if f.Fired == nil || f.Error != "" {
			continue
		}
		p := clientOf(f.Fault, f.Target)
		if p > 0 {
			hit[f.Step] = p
		}
		switch {
		case f.KeyBefore == evidence.KeyHeld:
			met[f.Step] = true
		case f.KeyBefore == evidence.KeyAbsent && p > 0:
			missed[f.Step] = true
		}
	}
	return met, missed, hit
}

// clientOf returns the client a fault on target acts on (pause-client c2,
// a client's own link e1-c2), or 0 for a fault on a node or a resource.
func clientOf(fault, target string) int {
	if _, p, ok := scenario.ClientLinkOf(target); ok {
		return p
	}
	if p, ok := scenario.ClientOf(target); ok && scenario.ClientFault(fault) {
		return p
	}
	return 0
}

// novel counts the features not seen before, and remembers them.
func (g *guide) novel(fs []string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]bool{}
	}
	n := 0
	for _, f := range fs {
		if !g.seen[f] {
			g.seen[f] = true
			n++
		}
	}
	return n
}

// features lists the behaviours a trial showed: each fault that fired, by
// kind, aim and what it found of the key before and after ("restart
// @master held>absent"), each anomaly kind seen or refused, and whether the
// lock was taken over or a holder acted late.
func features(tr trial.TrialResult, m checker.Margins) []string {
	var fs []string
	for _, f := range tr.Evidence.Faults {
		if f.Fired == nil || f.Error != "" {
			continue
		}
		fs = append(fs, fmt.Sprintf("%s %s %s>%s", f.Fault, f.Aim, f.KeyBefore, f.KeyAfter))
	}
	for k := range tr.Check.Counts() {
		fs = append(fs, "anomaly "+string(k))
	}
	for k := range tr.Check.PreventedCounts() {
		fs = append(fs, "prevented "+string(k))
	}
	if m.Takeovers > 0 {
		fs = append(fs, "takeover")
	}
	if m.Late > 0 {
		fs = append(fs, "late")
	}
	return fs
}

// A scored schedule is one of the pool: its score, and what its trial
// showed of its faults.
type scored struct {
	sc     Schedule
	score  float64
	met    map[int]bool // the steps that met the lock (see metTheLock)
	missed map[int]bool // the client faults that missed it
	hit    map[int]int  // the client each client fault hit
}

// add offers a scored schedule to the pool; a score of 0 taught nothing.
func (g *guide) add(s scored) {
	if s.score <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pool = append(g.pool, s)
	slices.SortStableFunc(g.pool, func(a, b scored) int { // closest first, then the earlier
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.sc.Index, b.sc.Index))
	})
	g.pool = g.pool[:min(len(g.pool), poolSize)]
}

// parent picks a schedule of the pool to change, by a tournament of two
// (the closer of two drawn at random), or reports that the pool is empty.
func (g *guide) parent(rng *rand.Rand) (scored, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pool) == 0 {
		return scored{}, false
	}
	a, b := g.pool[rng.IntN(len(g.pool))], g.pool[rng.IntN(len(g.pool))]
	if b.score > a.score {
		a = b
	}
	return a, true
}

// closeness scores how near a trial, with margins m, came to breaking the lock, from 0
// (nothing learnt: inconclusive, or the lock only changed hands by
// release) up: the shortest takeover (a grant while another holder had not
// released) against the TTL, 1 at a gap of 0; for each act a holder made
// after its lease was gone (up to three), half a point if the lock changed
// hands without a release in the trial, else lateAlone (a holder late
// because the service was down, with nobody granted meanwhile, is far from
// a double grant, and such schedules led the pool: it counts once); up to
// a point for a holder frozen or cut off for as long as its TTL (see
// silenced); a point for each
// node that lost the key while it was held (up to two) and for each kind
// of anomaly a mitigation refused (the attack met the fence); a quarter for
// a liveness anomaly. Short of a late act, up to half a point for a holder
// that acted later than its hold accounts for (see delayed): the gradient
// that leads a search to pause or slow a holder a little longer.
func closeness(tr trial.TrialResult, m checker.Margins, ttl, hold time.Duration) float64 {
	if tr.Observed == evidence.Inconclusive || ttl <= 0 {
		return 0
	}
	s := 0.0
	if m.Takeovers > 0 {
		s += 1 - min(1, max(0, float64(m.Takeover)/float64(ttl)))
	}
	if m.Takeovers > 0 {
		s += 0.5 * float64(min(m.Late, 3))
	} else {
		s += lateAlone * float64(min(m.Late, 1))
	}
	s += silenced(tr, ttl)
	s += 0.5 * delayed(m, ttl, hold)
	lost := 0
	for _, f := range tr.Evidence.Faults {
		if f.KeyBefore == "held" && f.KeyAfter == "absent" {
			lost++
		}
	}
	s += float64(min(lost, 2))
	s += float64(len(tr.Check.PreventedCounts()))
	for _, a := range tr.Check.Anomalies {
		if a.Kind == checker.StuckLock || a.Kind == checker.Starvation {
			s += 0.25
			break
		}
	}
	return s
}

// lateAlone is what a late act scores in a trial where the lock never
// changed hands without a release.
const lateAlone = 0.15

// silencing are the client faults that leave a holder unable to act or
// renew: frozen, or cut off from the service.
var silencing = []string{"pause-client", "partition"}

// silenced scores the longest a fault froze or cut off a client that held
// the lock when it fired, against the TTL: 1 for a lease's length or
// more. Without it, on etcd, ZooKeeper and PostgreSQL (whose members
// report no key), a pause of the holder scored no more than a restart
// that made the service unavailable, and the pool held restarts.
func silenced(tr trial.TrialResult, ttl time.Duration) float64 {
	longest := 0.0
	for _, f := range tr.Evidence.Faults {
		if f.Fired == nil || f.Healed == nil || f.Error != "" || f.KeyBefore != evidence.KeyHeld ||
			!slices.Contains(silencing, f.Fault) || clientOf(f.Fault, f.Target) == 0 {
			continue
		}
		longest = max(longest, *f.Healed-*f.Fired)
	}
	return min(1, longest/ttl.Seconds())
}

// delayed is how much of the slack a holder usually has (its TTL less its
// hold) the tightest act in time had used up: 0 for a holder that acted on
// time, 1 for one that acted just as its lease ran out.
func delayed(m checker.Margins, ttl, hold time.Duration) float64 {
	usual := ttl - hold
	if m.InTime == 0 || usual <= 0 {
		return 0
	}
	return min(1, max(0, float64(usual-m.Slack)/float64(usual)))
}

// pick returns schedule i of a search with the given seed: drawn afresh
// without a guide (a random search). With one: a pause or cut of a client
// waiting to be anchored first (see nextAnchor: the holder frozen past its
// lease is the attack the catalogue's client faults make), then the random
// search's first warmup schedules, then the schedules covering the kinds
// those missed, then mostly a change of a schedule of the guide's pool, the
// rest drawn afresh with the fault kinds weighted by how close their
// trials came. A schedule drawn with a pause or cut of a client it names
// is played right after that fault's anchor (see anchorFirst).
func (g *Generator) pick(seed uint64, i int, gd *guide) Schedule {
	if gd == nil {
		return g.Schedule(seed, i)
	}
	if sc, ok := gd.nextHeld(); ok {
		sc.Index = i
		return sc
	}
	return g.anchorFirst(seed, i, gd, g.guided(seed, i, gd))
}

// anchorFirst returns sc, drawn as schedule i, or, when sc freezes or cuts
// off a client it names, that fault's anchor alone in its place, sc held
// to be played next: the anchor waits for nothing sc's trial could show,
// and played first it meets the lock as soon as random's draw of the
// pause itself could (the anchor played after the draw cost a guided
// search a trial over random on the seeds where the draw broke the lock
// too).
func (g *Generator) anchorFirst(seed uint64, i int, gd *guide, sc Schedule) Schedule {
	hit := drawnHits(sc, g.base)
	if silencingGroup(groupSteps(sc.Faults, scored{hit: hit})) < 0 {
		return sc
	}
	sc.Index = gd.after(i)
	gd.hold(sc)
	rng := rand.New(rand.NewPCG(seed, uint64(i)+0xa7c1))
	return g.anchorOnly(scored{sc: sc, hit: hit}, rng, i)
}

// guided returns schedule i of a guided search (see pick).
func (g *Generator) guided(seed uint64, i int, gd *guide) Schedule {
	rng := rand.New(rand.NewPCG(seed, uint64(i)+0x9e1d))
	if p, ok := gd.nextAnchor(); ok {
		return g.anchorOnly(p, rng, i)
	}
	if k, ok := gd.warmDraw(); ok {
		sc := g.Schedule(seed, k)
		sc.Index = i
		return sc
	}
	if sc, ok := gd.nextCover(); ok {
		sc.Index = i
		return sc
	}
	w := gd.weights(g.kinds)
	if rng.Float64() < fresh {
		return g.schedule(seed, i, w)
	}
	p, ok := gd.parent(rng)
	if !ok {
		return g.schedule(seed, i, w)
	}
	return g.mutate(p, w, rng, i)
}

const (
	onFocus   = 0.75 // the share of changes made to a fault that met the lock, when one did
	stretch   = 0.75 // the share of resizes of such a fault that lengthen it
	anchor    = 0.75 // the share of changes to a client fault that missed the lock that anchor it
	anchorMet = 0.5  // the share of changes to a client fault that met it that anchor it
	// minSilence is the shortest an anchored pause or cut of a holder
	// lasts, in TTLs (see anchored).
	minSilence = 2
)

// anchored returns a client fault's group, which hit client p, waiting
// instead for the moment p next reads the resource under the lock (when:
// read), from half a TTL before its time, for up to two TTLs: the holder
// frozen or cut off inside its hold, before it writes, as the catalogue's
// scenarios aim it. A fault that missed the lock meets it so; one that met
// it after the holder's write (only its release late) comes before the
// write. A pause of whichever client holds (@holder) is aimed at p alone.
// A fault that freezes or cuts off the client lasts at least minSilence
// TTLs: inside its hold for less than its lease, a holder loses nothing,
// and the lease must run out and another client take the lock before the
// holder wakes (in kept etcd searches, TTL 2s, anchored pauses of the
// holder of 2.22s and 2.82s left the lock safe, a random one of 3.02s
// too; 4.44s, eleven schedules later, broke it).
func anchored(d *draw, gr []scenario.Step, p int) []scenario.Step {
	out := slices.Clone(gr)
	at := scenario.Duration(max(0, out[0].At.D()-d.ttl/2))
	span := out[0].For
	if slices.Contains(silencing, out[0].Fault) {
		span = max(span, scenario.Duration(minSilence*float64(d.ttl)))
	}
	for k := range out {
		if out[k].Fault == "pause-client" && out[k].Node == scenario.AimHolder {
			out[k].Node, out[k].Client = "", p
		}
		out[k].At, out[k].For, out[k].When, out[k].Within = at, span, &scenario.When{Event: "read", Client: p}, scenario.Duration(2*d.ttl)
	}
	return out
}

// mutate returns a neighbour of parent, as schedule i: one or two changes,
// each of one fault (all the steps of a group fault move together): moved
// in time, stretched or shortened, aimed elsewhere, dropped, anchored, or a
// fault added; or the hold redrawn. A fault that met the lock in the
// parent's trial is changed first, and mostly lengthened: a holder frozen,
// cut off or slowed a little longer is the gradient toward losing the lock.
// A fault added is drawn with the kinds weighted by w (nil: alike).
func (g *Generator) mutate(parent scored, w []float64, rng *rand.Rand, i int) Schedule {
	d := g.draw(rng)
	groups := groupSteps(parent.sc.Faults, parent)
	var changes []string
	for range 1 + rng.IntN(2) {
		var what string
		groups, what = g.change(d, groups, w)
		changes = append(changes, what)
	}
	sc := Schedule{Index: i, Seed: rng.Uint64()>>1 + 1, Hold: parent.sc.Hold}
	if slices.Contains(changes, "hold") {
		sc.Hold = scenario.Duration(d.between(g.holdMin, g.holdMax))
	}
	sc.Faults = assemble(groups)
	sc.Change = fmt.Sprintf("#%d: %s", parent.sc.Index, strings.Join(changes, ", "))
	return sc
}

// assemble returns the steps of groups in time order, leaving out a group
// that clashes with one before it.
func assemble(groups []group) []scenario.Step {
	var faults []scenario.Step
	for _, gr := range groups {
		if !slices.ContainsFunc(gr.steps, func(st scenario.Step) bool {
			return slices.ContainsFunc(faults, func(o scenario.Step) bool { return clash(o, st) })
		}) {
			faults = append(faults, gr.steps...)
		}
	}
	slices.SortStableFunc(faults, func(a, b scenario.Step) int { return int(a.At - b.At) })
	return faults
}

// anchorOnly returns, as schedule i, parent's first silencing client
// fault anchored (see anchored), alone: whether that pause or cut, met
// with the lock held, breaks it. The parent's other faults are left out:
// in a kept ZooKeeper search a member killed and another restarted beside
// the anchored pause left the lock safe twice; without the restart, the
// pause broke it.
func (g *Generator) anchorOnly(parent scored, rng *rand.Rand, i int) Schedule {
	groups := groupSteps(parent.sc.Faults, parent)
	gr := groups[silencingGroup(groups)]
	sc := Schedule{Index: i, Seed: rng.Uint64()>>1 + 1, Hold: parent.sc.Hold, Faults: anchored(g.draw(rng), gr.steps, gr.client)}
	sc.Change = fmt.Sprintf("#%d: anchor %s alone", parent.sc.Index, gr.kind())
	return sc
}

// A group is one fault of a schedule, its steps (one per target, at one
// time, for as long), with what the parent's trial showed of it.
type group struct {
	steps  []scenario.Step
	met    bool // it met the lock (see metTheLock)
	missed bool // a client fault that missed the lock
	client int  // the client a client fault hit, 0 for any other fault
}

// anchorable returns the share of changes to gr that anchor it: a client
// fault that fired and does not wait for a moment yet.
func (gr group) anchorable() float64 {
	switch {
	case gr.client == 0 || gr.steps[0].When != nil:
		return 0
	case gr.missed:
		return anchor
	case gr.met:
		return anchorMet
	}
	return 0
}

func (gr group) kind() string { return gr.steps[0].Fault }

// change makes one change to groups and says which; a fault added is
// drawn with the kinds weighted by w.
func (g *Generator) change(d *draw, groups []group, w []float64) ([]group, string) {
	groups = slices.Clone(groups)
	if len(groups) == 0 || (len(groups) < g.maxFaults && d.chance(0.15)) {
		kind := g.kind(d.rng, w)
		return append(groups, group{steps: vocabulary[kind].make(d)}), "add " + kind
	}
	j := pickGroup(d, groups)
	gr := groups[j]
	switch r := d.rng.IntN(10); {
	case d.chance(gr.anchorable()):
		groups[j] = group{steps: anchored(d, gr.steps, gr.client)}
		return groups, "anchor " + gr.kind()
	case r < 3: // move
		shift := d.between(d.ttl/20, d.ttl/2)
		if d.chance(0.5) {
			shift = -shift
		}
		at := scenario.Duration(min(max(0, gr.steps[0].At.D()+shift), faultWindow(d.dur)))
		groups[j].steps = retime(gr.steps, at, gr.steps[0].For)
		return groups, "move " + gr.kind()
	case r < 6 && gr.steps[0].For > 0: // stretch or shorten
		f := []float64{0.5, 0.75, 1.5, 2}[d.rng.IntN(4)]
		if gr.met && f < 1 && d.chance((stretch-0.5)/0.5) {
			f = 1 / f
		}
		span := scenario.Duration(max(10*time.Millisecond, round(time.Duration(float64(gr.steps[0].For.D())*f))))
		groups[j].steps = retime(gr.steps, gr.steps[0].At, span)
		return groups, "resize " + gr.kind()
	case r < 8: // aim elsewhere (redraw, at the same time)
		redrawn := vocabulary[gr.kind()].make(d)
		span := redrawn[0].For
		if span > 0 && gr.steps[0].For > 0 {
			span = gr.steps[0].For
		}
		groups[j] = group{steps: retime(redrawn, gr.steps[0].At, span)}
		return groups, "redraw " + gr.kind()
	case r < 9 && len(groups) > 1:
		return slices.Delete(groups, j, j+1), "drop " + gr.kind()
	}
	return groups, "hold"
}

// pickGroup picks the group to change, most of the time (onFocus) among
// the client faults that met the lock (a holder frozen or cut off: the
// near miss of the attack on a lease) when there are any, else among the
// faults that met the lock and the client faults that missed it; else
// any. (On etcd, ZooKeeper and PostgreSQL a member's fault "meets" the
// lock whenever someone holds it, and such faults took the changes a
// pause of the holder needed.)
func pickGroup(d *draw, groups []group) int {
	var client, other []int
	for j, gr := range groups {
		switch {
		case gr.met && gr.client > 0:
			client = append(client, j)
		case gr.met || gr.missed:
			other = append(other, j)
		}
	}
	focus := client
	if len(focus) == 0 {
		focus = other
	}
	if len(focus) > 0 && d.chance(onFocus) {
		return focus[d.rng.IntN(len(focus))]
	}
	return d.rng.IntN(len(groups))
}

// retime returns the steps of a group at at, lasting span.
func retime(gr []scenario.Step, at, span scenario.Duration) []scenario.Step {
	out := slices.Clone(gr)
	for k := range out {
		out[k].At, out[k].For = at, span
	}
	return out
}

// groupSteps splits faults into the groups a draw made: steps of one kind
// at one time, for as long, are one fault on several targets. A group met
// the lock, missed it or hit a client when one of its steps (by index in
// faults) did in parent's trial.
func groupSteps(faults []scenario.Step, parent scored) []group {
	var groups []group
	for i, st := range faults {
		j := slices.IndexFunc(groups, func(gr group) bool {
			f := gr.steps[0]
			return f.Fault == st.Fault && f.At == st.At && f.For == st.For
		})
		if j < 0 {
			groups = append(groups, group{})
			j = len(groups) - 1
		}
		gr := &groups[j]
		gr.steps = append(gr.steps, st)
		gr.met, gr.missed = gr.met || parent.met[i], gr.missed || parent.missed[i]
		if p := parent.hit[i]; p > 0 {
			gr.client = p
		}
	}
	return groups
}
