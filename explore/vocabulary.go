package explore

import (
	"slices"

	"github.com/lockpick/lockpick/scenario"
)

// A kind is one fault of the vocabulary: which scenarios it fits, and how
// to draw it.
type kind struct {
	// fits returns why explore does not draw the fault for s, or "",
	// beyond where the fault itself can act (see whyNot).
	fits func(s scenario.Scenario) string
	// make draws one fault: one step, or one per node of a group.
	make func(d *draw) []scenario.Step
}

func always(scenario.Scenario) string { return "" }

// whyNot says why explore does not draw fault k for s: where the fault can
// act, by the rule a scenario file meets ([scenario.Scenario.Fits]), then
// explore's own policy; "" if it draws it.
func whyNot(k string, s scenario.Scenario) string {
	if err := s.Fits(k); err != nil {
		return err.Error()
	}
	return vocabulary[k].fits(s)
}

// vocabulary holds the faults explore draws (all of lockpick's but
// client-pause and kill-client, which scenarios script).
// Intensities scale with the lock's TTL.
var vocabulary = map[string]kind{
	"kill": {always, func(d *draw) []scenario.Step {
		span := d.span() // then the node comes back, empty without persistence
		if d.chance(0.3) {
			span = 0 // down until the end
		}
		return steps("kill", d.group(), d.at(), span, nil)
	}},
	"restart": {always, func(d *draw) []scenario.Step {
		p := map[string]any{}
		if d.chance(0.4) {
			p["delay"] = d.between(d.ttl/4, d.ttl*3/2).String()
		}
		if d.chance(0.2) {
			p["wipe"] = true
		}
		targets := d.group()
		if !d.canWipe(len(targets)) {
			delete(p, "wipe")
		}
		return steps("restart", targets, d.at(), 0, p)
	}},
	"power-loss": {func(s scenario.Scenario) string {
		if serversOf(s).service == "" && (s.Topology.Persistence == "" || s.Topology.Persistence == "none") {
			return "the nodes persist nothing, so a power loss is a restart"
		}
		return ""
	}, func(d *draw) []scenario.Step {
		p := map[string]any{}
		if d.chance(0.4) {
			p["delay"] = d.between(d.ttl/4, d.ttl*3/2).String()
		}
		return steps("power-loss", d.group(), d.at(), 0, p)
	}},
	"pause": {always, func(d *draw) []scenario.Step {
		return steps("pause", d.group(), d.at(), d.span(), nil)
	}},
	"partition": {always, func(d *draw) []scenario.Step {
		p := map[string]any{}
		switch r := d.rng.IntN(4); {
		case r == 0:
			p["refuse"] = true
		case r == 1:
			p["direction"] = "to-node"
		case r == 2:
			p["direction"] = "from-node"
		}
		targets := d.links()
		if d.chance(0.3) {
			targets = d.group()
		}
		return steps("partition", targets, d.at(), d.span(), p)
	}},
	"latency": {always, func(d *draw) []scenario.Step {
		lat := d.between(d.ttl/20, d.ttl/2)
		p := map[string]any{"latency": lat.String()}
		if d.chance(0.5) {
			p["jitter"] = round(lat / 4).String()
		}
		return steps("latency", d.links(), d.at(), d.span(), p)
	}},
	"drop-replies": {always, func(d *draw) []scenario.Step {
		return steps("drop-replies", d.links(), d.at(), d.span(), nil)
	}},
	"reset": {always, func(d *draw) []scenario.Step {
		return steps("reset", d.links(), d.at(), d.span(), nil)
	}},
	"cut-replication": {always, func(d *draw) []scenario.Step {
		span := d.span()
		if d.chance(0.5) {
			span = 0
		}
		// A cut acts on the writes after it: half the time it is in place
		// from the start, before the first grant replicates.
		at := d.at()
		if d.chance(0.5) {
			at = 0
		}
		return steps("cut-replication", []string{scenario.AimReplica}, at, span, nil)
	}},
	"clock-jump": {always, func(d *draw) []scenario.Step {
		off := d.between(d.ttl/2, d.ttl*3)
		if d.chance(0.2) {
			off = -off
		}
		return steps("clock-jump", d.group(), d.at(), 0, map[string]any{"offset": off.String()})
	}},
	"clock-rate": {always, func(d *draw) []scenario.Step {
		rates := []float64{0.5, 1.5, 2, 4}
		return steps("clock-rate", d.group(), d.at(), d.span(), map[string]any{"rate": rates[d.rng.IntN(len(rates))]})
	}},
	"promote": {func(s scenario.Scenario) string {
		if s.Topology.Sentinels > 0 {
			return "sentinels would fight it; use sentinel-failover"
		}
		return ""
	}, func(d *draw) []scenario.Step {
		if d.s.Topology.Postgres > 0 { // a standby, named: p2..pN
			return steps("promote", []string{d.nodeName(1 + d.rng.IntN(d.nodes()-1))}, d.at(), 0, nil)
		}
		return steps("promote", []string{scenario.AimReplica}, d.at(), 0, map[string]any{"demote": d.chance(0.5)})
	}},
	"sentinel-failover": {always, func(d *draw) []scenario.Step {
		return steps("sentinel-failover", []string{scenario.AimMaster}, d.at(), 0, nil)
	}},
	"cluster-failover": {always, func(d *draw) []scenario.Step {
		modes := []string{"", "force", "takeover"}
		return steps("cluster-failover", []string{scenario.AimReplica}, d.at(), 0, map[string]any{"mode": modes[d.rng.IntN(len(modes))]})
	}},
	"bus-partition": {always, cutOff("bus-partition", scenario.AimMaster)},
	// The leader cut off alone half the time: the etcd side of a minority
	// primary.
	"peer-partition": {always, cutOff("peer-partition", scenario.AimLeader)},
	"pause-client": {func(s scenario.Scenario) string {
		if len(s.Isolate) == 0 {
			return "no client is isolated (isolate:), so none can be frozen"
		}
		return ""
	}, func(d *draw) []scenario.Step {
		st := scenario.Step{At: d.at(), Fault: "pause-client", For: scenario.Duration(d.between(d.ttl/2, d.ttl*2))}
		if d.chance(0.5) {
			st.Node = scenario.AimHolder
		} else {
			st.Client = d.s.Isolate[d.rng.IntN(len(d.s.Isolate))]
		}
		return []scenario.Step{st}
	}},
}

// cutOff draws a partition of kind that cuts one node off from the rest:
// the node aim names half the time, else any node (see draw.node).
func cutOff(kind, aim string) func(d *draw) []scenario.Step {
	return func(d *draw) []scenario.Step {
		target := aim
		if d.chance(0.5) {
			target = d.node()
		}
		return steps(kind, []string{target}, d.at(), d.span(), nil)
	}
}

// Kinds returns every fault explore can draw, sorted.
func Kinds() []string {
	var out []string
	for k := range vocabulary {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
