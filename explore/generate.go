package explore

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockpick/lockpick/scenario"
)

// DefaultMaxFaults bounds a schedule's faults when the scenario does not.
const DefaultMaxFaults = 4

// A Schedule is one random plan for a trial: the faults, and the hold time
// of the workload they meet. Schedule i of a search is a function of the
// search's seed and i alone.
type Schedule struct {
	Index  int               `json:"index"`
	Seed   uint64            `json:"seed"` // the trial's seed
	Hold   scenario.Duration `json:"hold"`
	Faults []scenario.Step   `json:"faults"`
	// Change says, for a schedule a guided search made from another, which
	// one and how, e.g. "#12: move kill, resize pause"; "" when drawn afresh.
	Change string `json:"change,omitempty"`
}

// Apply returns base with the schedule's hold and faults, no requirements
// of its own (the base's were written for its faults), no arms and no
// suites. Its trial lasts until the faults have settled (see settled),
// allowing for a moment that comes as late as its window; it may end a
// TTL after the last heal when the moments came sooner (see
// scenario.Early), never before base's duration.
func (sc Schedule) Apply(base scenario.Scenario) scenario.Scenario {
	s := base
	s.Hold = sc.Hold
	s.Faults = slices.Clone(sc.Faults)
	s.Require, s.Arms, s.Explore, s.Suites = nil, nil, nil, nil
	ttl := base.Lock.TTL.D()
	s.Duration = scenario.Duration(max(base.Duration.D(), settled(s.Faults, ttl)))
	s.Early = &scenario.Early{Min: base.Duration.D(), Settle: ttl}
	return s
}

// settled returns when the faults have healed and a lease they touched has
// run out: the last heal (a fault's end, or a restart's delay), plus a
// TTL. A trial that ends before then cannot show what the fault did to
// the lock (a paused holder that never wakes to write).
func settled(faults []scenario.Step, ttl time.Duration) time.Duration {
	var last time.Duration
	for _, f := range faults {
		end := f.At.D() + f.Within.D() + f.For.D() // a step waiting for its moment may fire as late as Within
		if d, ok := f.Params["delay"].(string); ok {
			if delay, err := time.ParseDuration(d); err == nil {
				end = max(end, f.At.D()+delay)
			}
		}
		last = max(last, end)
	}
	return round(last + ttl)
}

// Describe lists the faults in words, e.g. "+300ms kill @master; +1.2s pause n2 for 800ms".
func (sc Schedule) Describe() string {
	if len(sc.Faults) == 0 {
		return "no faults"
	}
	return scenario.Scenario{Faults: sc.Faults}.Schedule()
}

// A Generator draws random schedules for a scenario: faults from its
// vocabulary, aimed at nodes by name or by the system's state, with
// intensities scaled to the lock's TTL.
type Generator struct {
	base      scenario.Scenario
	kinds     []string
	maxFaults int
	holdMin   time.Duration
	holdMax   time.Duration
}

// NewGenerator returns a generator for base. kinds is the vocabulary; empty
// means base's explore section, else every kind that fits the topology. A
// kind that does not fit (promote without replicas, pause-client without
// isolated clients) is an error.
func NewGenerator(base scenario.Scenario, kinds []string) (*Generator, error) {
	g := &Generator{base: base, maxFaults: DefaultMaxFaults}
	ttl := base.Lock.TTL.D()
	g.holdMin, g.holdMax = ttl/20, ttl*3/4
	if e := base.Explore; e != nil {
		if e.MaxFaults > 0 {
			g.maxFaults = e.MaxFaults
		}
		if len(e.Hold) == 2 {
			g.holdMin, g.holdMax = e.Hold[0].D(), e.Hold[1].D()
		}
		if len(kinds) == 0 {
			kinds = e.Faults
		}
	}
	if len(kinds) == 0 {
		for _, k := range Kinds() {
			if whyNot(k, base) == "" {
				kinds = append(kinds, k)
			}
		}
	}
	for _, k := range kinds {
		if _, ok := vocabulary[k]; !ok {
			return nil, fmt.Errorf("%w: unknown fault %q (known: %s)", scenario.ErrBadScenario, k, strings.Join(Kinds(), ", "))
		}
		if why := whyNot(k, base); why != "" {
			return nil, fmt.Errorf("%w: fault %s does not fit %s%s: %s", scenario.ErrBadScenario, k, base.Name, onServers(base), why)
		}
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("%w: no fault fits %s", scenario.ErrBadScenario, base.Name)
	}
	g.kinds = kinds
	return g, nil
}

// onServers names the members of an etcd, ZooKeeper or PostgreSQL topology,
// for an error that a Redis fault does not fit it; "" for Redis.
func onServers(s scenario.Scenario) string {
	sv := serversOf(s)
	if sv.service == "" {
		return ""
	}
	return fmt.Sprintf(" (%s %s1..%s%d, no Redis node)", sv.service, sv.prefix, sv.prefix, sv.n)
}

// Kinds returns the vocabulary's kinds, the faults a generator knows.
func (g *Generator) Kinds() []string { return slices.Clone(g.kinds) }

// Schedule returns schedule i of the search with the given seed: 1 to
// MaxFaults faults (a group fault, on a minority or a majority of nodes,
// counts once), sorted by time.
func (g *Generator) Schedule(seed uint64, i int) Schedule { return g.schedule(seed, i, nil) }

// schedule is Schedule with the fault kinds drawn in proportion to w, one
// weight per kind of the generator (nil: every kind alike, as Schedule).
func (g *Generator) schedule(seed uint64, i int, w []float64) Schedule {
	return g.build(seed, i, w, "")
}

// covering returns the schedules that follow a guided search's warmup
// random ones (the same draws; see guide.cover): a ZooKeeper search's
// random warm-up drew no client fault that met the lock in 2 of 5 seeds,
// and the guide had nothing to prefer. Each draws its faults among the
// kinds none before drew, until every kind was drawn (a schedule of 1 to
// MaxFaults faults covers a few at once: 2 schedules, typically, for the
// dozen kinds of etcd).
func (g *Generator) covering(seed uint64) []Schedule {
	drawn := map[string]bool{}
	for i := range warmup {
		for _, st := range g.Schedule(seed, i).Faults {
			drawn[st.Fault] = true
		}
	}
	var cover []Schedule
	for len(drawn) < len(g.kinds) && len(cover) < len(g.kinds) {
		w := make([]float64, len(g.kinds))
		first := ""
		for k, kind := range g.kinds {
			if !drawn[kind] {
				w[k] = 1
				first = cmp.Or(first, kind)
			}
		}
		sc := g.build(seed, warmup+len(cover), w, first)
		for _, st := range sc.Faults {
			drawn[st.Fault] = true
		}
		cover = append(cover, sc)
	}
	return cover
}

// build draws schedule i with the kinds weighted by w, its first fault of
// kind first if that is set (the draws are the same either way).
func (g *Generator) build(seed uint64, i int, w []float64, first string) Schedule {
	rng := rand.New(rand.NewPCG(seed, uint64(i)+0x5eed))
	d := g.draw(rng)
	sc := Schedule{Index: i, Seed: rng.Uint64()>>1 + 1, Hold: scenario.Duration(d.between(g.holdMin, g.holdMax))}
	n := 1 + rng.IntN(g.maxFaults)
	for j := range n {
		kind := g.kind(rng, w)
		if j == 0 && first != "" {
			kind = first
		}
		for _, st := range vocabulary[kind].make(d) {
			if !slices.ContainsFunc(sc.Faults, func(o scenario.Step) bool { return clash(o, st) }) {
				sc.Faults = append(sc.Faults, st)
			}
		}
	}
	slices.SortStableFunc(sc.Faults, func(a, b scenario.Step) int { return int(a.At - b.At) })
	return sc
}

// kind draws one of the generator's kinds, in proportion to w (one
// weight per kind), or alike when w is nil.
func (g *Generator) kind(rng *rand.Rand, w []float64) string {
	if len(w) != len(g.kinds) {
		return g.kinds[rng.IntN(len(g.kinds))]
	}
	total := 0.0
	for _, x := range w {
		total += x
	}
	r := rng.Float64() * total
	for i, x := range w {
		if r < x {
			return g.kinds[i]
		}
		r -= x
	}
	return g.kinds[len(g.kinds)-1]
}

// draw returns a draw from rng on g's scenario.
func (g *Generator) draw(rng *rand.Rand) *draw {
	return &draw{rng: rng, s: g.base, sv: serversOf(g.base), ttl: g.base.Lock.TTL.D(), dur: g.base.Duration.D()}
}

// A draw is the random source of one schedule, with the scale of its
// intensities.
type draw struct {
	rng      *rand.Rand
	s        scenario.Scenario
	sv       servers
	ttl, dur time.Duration
}

// servers are a topology's servers as explore names and aims at them.
type servers struct {
	service string // "etcd members", "ZooKeeper members", "PostgreSQL nodes"; "" for Redis
	prefix  string // of the names: e1.., z1.., p1.., n1..
	n       int
	quorum  bool // members of a quorum: a leader and followers, and every client has its own link to each
}

// serversOf returns s's servers.
func serversOf(s scenario.Scenario) servers {
	t := s.Topology
	switch {
	case t.Etcd > 0:
		return servers{"etcd members", "e", t.Etcd, true}
	case t.ZooKeeper > 0:
		return servers{"ZooKeeper members", "z", t.ZooKeeper, true}
	case t.Postgres > 0:
		return servers{"PostgreSQL nodes", "p", t.Postgres, false}
	}
	return servers{"", "n", t.Nodes(), false}
}

// round keeps drawn times readable in a scenario file: 10ms steps.
func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

// between draws a duration uniformly in [lo, hi], rounded.
func (d *draw) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return round(lo)
	}
	return round(lo + time.Duration(d.rng.Int64N(int64(hi-lo))))
}

// at draws an injection time within [faultWindow] of the trial.
func (d *draw) at() scenario.Duration {
	return scenario.Duration(d.between(0, faultWindow(d.dur)))
}

// faultWindow is the part of a trial of dur that faults are due in, its
// first 70%, so the lock meets the fault and the clients have time to act
// on it (and the checker to see them do so) before the trial ends.
func faultWindow(dur time.Duration) time.Duration { return dur * 7 / 10 }

// span draws how long a fault lasts: TTL/10 to 1.5×TTL.
func (d *draw) span() scenario.Duration {
	return scenario.Duration(d.between(d.ttl/10, d.ttl*3/2))
}

func (d *draw) chance(p float64) bool { return d.rng.Float64() < p }

// nodes is how many nodes (or members) the topology has.
func (d *draw) nodes() int { return d.sv.n }

// nodeName names node i (from 0): n1.. for Redis, e1.., z1.., p1.. for
// etcd, ZooKeeper and PostgreSQL.
func (d *draw) nodeName(i int) string { return fmt.Sprintf("%s%d", d.sv.prefix, i+1) }

// aims are the targets named by the system's state that a node fault may
// take: the leader or a follower of a quorum (every member holds the key
// alike, so @key-holder names nothing there), none on PostgreSQL (its
// nodes are named), else the key's holder and, with replicas, the master
// or a replica.
func (d *draw) aims() []string {
	switch {
	case d.sv.quorum && d.sv.n < 2:
		return []string{scenario.AimLeader} // a lone member has no follower
	case d.sv.quorum:
		return []string{scenario.AimLeader, scenario.AimFollower}
	case d.sv.service != "":
		return nil
	}
	aims := []string{scenario.AimKeyHolder}
	if d.s.Topology.Replicas > 0 {
		aims = append(aims, scenario.AimMaster, scenario.AimReplica)
	}
	return aims
}

// node aims at one node: by name, or by the system's state.
func (d *draw) node() string {
	aims := d.aims()
	if len(aims) > 0 && d.chance(0.5) {
		return aims[d.rng.IntN(len(aims))]
	}
	return d.nodeName(d.rng.IntN(d.nodes()))
}

// group returns the targets of a node fault: mostly one node, sometimes a
// minority or a majority of the nodes, drawn at random.
func (d *draw) group() []string {
	n := d.nodes()
	if n < 3 || d.chance(0.6) {
		return []string{d.node()}
	}
	size := n / 2 // a minority
	if d.chance(0.5) {
		size = n/2 + 1 // a majority
	}
	perm := d.rng.Perm(n)[:size]
	slices.Sort(perm)
	out := make([]string, size)
	for i, p := range perm {
		out[i] = d.nodeName(p)
	}
	return out
}

// link aims a network fault at a node's client link or, half the time, at
// one client's path to the resource (r<p>) or the holder's.
func (d *draw) link() string {
	if d.chance(0.5) {
		return d.node()
	}
	if d.chance(0.5) {
		return scenario.AimHolderResource
	}
	return fmt.Sprintf("r%d", 1+d.rng.IntN(d.s.Clients))
}

// canWipe reports whether k nodes can be restarted without their data at
// once. A wiped etcd member comes back as a new member, which the others
// must remove and add by consensus: with more than N - quorum wiped, the
// rest have no quorum and the restart fails (measured: e2 and e3 of 3 wiped
// at once, both "replace wiped member: ... context deadline exceeded", the
// trial inconclusive). A PostgreSQL node is never wiped (a primary would
// come back as a new, empty cluster its replica cannot follow: refused).
// Redis nodes and ZooKeeper members (which rejoin as they are) can all be.
func (d *draw) canWipe(k int) bool {
	switch n := d.s.Topology.Etcd; {
	case d.s.Topology.Postgres > 0:
		return false
	case n > 0:
		return k <= n-(n/2+1)
	}
	return true
}

// links returns the targets of a network fault on one link (see link) or,
// on etcd, ZooKeeper and PostgreSQL, a third of the time, one client's own
// links to every member (e1-c<p>..eN-c<p>): that client alone cut off,
// slowed or dropped, whichever member its client tries (for PostgreSQL the
// holder's connection cut, the attack that matters). Redis draws stay as
// they were.
func (d *draw) links() []string {
	if d.sv.service != "" && d.chance(1.0/3) {
		return d.clientLinks()
	}
	return []string{d.link()}
}

// clientLinks returns a random client's own links to every member.
func (d *draw) clientLinks() []string {
	p := 1 + d.rng.IntN(d.s.Clients)
	out := make([]string, d.sv.n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-c%d", d.nodeName(i), p)
	}
	return out
}

// steps makes one step per target, all at the same time and for as long.
func steps(kind string, targets []string, at, span scenario.Duration, params map[string]any) []scenario.Step {
	out := make([]scenario.Step, len(targets))
	for i, t := range targets {
		out[i] = scenario.Step{At: at, Fault: kind, Node: t, For: span}
		if len(params) > 0 {
			out[i].Params = maps.Clone(params)
		}
	}
	return out
}

// clash reports whether two faults of the same kind may hit one target at
// once: the second would undo or replace the first (one toxic, one pause),
// so its effect could not be verified and the trial would prove nothing.
// Aimed targets may resolve to any node, so they clash with every target.
func clash(a, b scenario.Step) bool {
	if a.Fault != b.Fault {
		return false
	}
	if a.Node != b.Node && !strings.HasPrefix(a.Node, "@") && !strings.HasPrefix(b.Node, "@") {
		return false
	}
	if a.Fault == "pause-client" && a.Client != b.Client && a.Node == "" && b.Node == "" {
		return false
	}
	end := func(s scenario.Step) scenario.Duration {
		if s.For == 0 {
			if lasting(s.Fault) {
				return scenario.Duration(1 << 62) // until the end of the trial
			}
			return s.At + scenario.Duration(time.Second) // a one-shot fault and its aftermath
		}
		return s.At + s.For
	}
	return a.At < end(b) && b.At < end(a)
}

// lasting reports whether a fault without For stays until the trial ends.
func lasting(kind string) bool { return kind == "kill" || kind == "cut-replication" }
