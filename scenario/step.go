package scenario

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/faults"
	"github.com/lockpick/lockpick/internal/suggest"
)

// A Step is one fault in a scenario's schedule.
//
// The fault kinds are package faults' ("kill", "restart", "pause", "partition",
// "latency", "drop-replies", "reset", "cut-replication", "clock-jump",
// "clock-rate", "promote", "sentinel-failover"), configured by Params, plus
// "pause-client", which freezes an isolated client's whole process, and
// "kill-client", which kills it (SIGKILL): the client crashes.
type Step struct {
	// At is when the fault is injected, from the start of the trial.
	At Duration `json:"at" yaml:"at"`
	// Jitter adds a random delay in [0, Jitter), drawn from the trial's seed.
	Jitter Duration `json:"jitter,omitempty" yaml:"jitter"`
	// Fault is the fault kind.
	Fault string `json:"fault" yaml:"fault"`
	// Node names the target: a Redis node "n1".., or client p's path to the
	// resource "r<p>".
	Node string `json:"node,omitempty" yaml:"node"`
	// Client names the isolated client of pause-client and kill-client.
	Client int `json:"client,omitempty" yaml:"client"`
	// For heals the fault this long after it was injected; 0 leaves it until
	// the end of the trial, when every fault is healed.
	For Duration `json:"for,omitempty" yaml:"for"`
	// Params configures the fault, e.g. {delay: 3s} for restart.
	Params map[string]any `json:"params,omitempty" yaml:"params"`
	// When, if set, makes the step wait from At for a moment of the trial
	// (a client's acquire, its grant) and fire then; For counts from the
	// moment. See [When].
	When *When `json:"when,omitempty" yaml:"when"`
	// Within is how long after At the moment may come; past it the moment
	// never came and the trial is inconclusive. 0: until the trial ends.
	Within Duration `json:"within,omitempty" yaml:"within"`
}

// ClientFault reports whether a fault kind acts on an isolated client's
// process rather than on a node.
func ClientFault(kind string) bool { return kind == "pause-client" || kind == "kill-client" }

// Target names what the step acts on: its node, or "c<p>" for a client
// fault on client p.
func (s Step) Target() string {
	if ClientFault(s.Fault) && !s.Aimed() {
		return fmt.Sprintf("c%d", s.Client)
	}
	return s.Node
}

// ClientOf returns the client a client-fault target such as "c2" names.
func ClientOf(target string) (int, bool) {
	p, err := strconv.Atoi(strings.TrimPrefix(target, "c"))
	return p, err == nil && strings.HasPrefix(target, "c")
}

// NewFault builds the step's fault; a client fault needs the pid of the
// client's worker from pids (nil: only check that the fault can be built).
func (s Step) NewFault(pids map[int]int) (faults.Fault, error) {
	if ClientFault(s.Fault) {
		pid, ok := pids[s.Client]
		if !ok && pids != nil {
			return nil, fmt.Errorf("%w: client %d is not isolated", ErrBadScenario, s.Client)
		}
		return ClientProcessFault(s.Fault, pid), nil
	}
	return faults.NewFault(s.Fault, s.Params)
}

// ClientProcessFault is the cluster fault of a client fault kind on pid.
func ClientProcessFault(kind string, pid int) faults.Fault {
	if kind == "kill-client" {
		return &faults.ProcessKillFault{PID: pid}
	}
	return &faults.ProcessPauseFault{PID: pid}
}

// validate checks the step's fault and its parameters: the field (as
// the file writes it, under the step) and a message for the first
// problem, or "", "".
func (s Step) validate() (field, msg string) {
	_, err := s.NewFault(nil)
	if errors.Is(err, faults.ErrUnknownFault) {
		return "fault", fmt.Sprintf("unknown fault %q%s (known: %s)", s.Fault,
			suggest.Hint(s.Fault, FaultKinds()), strings.Join(FaultKinds(), ", "))
	}
	if p, msg := s.paramProblem(); msg != "" {
		return "params." + p, msg
	}
	if err != nil {
		return "params", strings.TrimPrefix(strings.TrimPrefix(err.Error(), cluster.ErrBadFault.Error()+": "), s.Fault+": ")
	}
	return "", ""
}

// paramProblem checks each parameter (in name order) against the fields
// of the step's fault: the first one the fault does not take or whose
// value does not fit, and why; "", "" when they all fit. A duration may
// be written "250ms" or as nanoseconds, and is not negative except a
// clock jump's offset; a timeout, whose 0 means the fault's default, is
// above 0.
func (s Step) paramProblem() (param, msg string) {
	if len(s.Params) == 0 {
		return "", ""
	}
	names := slices.Sorted(maps.Keys(s.Params))
	if ClientFault(s.Fault) {
		return names[0], fmt.Sprintf("unknown parameter %q: %s takes none", names[0], s.Fault)
	}
	f, err := faults.NewFault(s.Fault, nil)
	if err != nil {
		return "", ""
	}
	takes := paramTypes(f)
	known := slices.Sorted(maps.Keys(takes))
	for _, name := range names {
		t, ok := takes[name]
		switch {
		case !ok && len(known) == 0:
			return name, fmt.Sprintf("unknown parameter %q: %s takes none", name, s.Fault)
		case !ok:
			return name, fmt.Sprintf("unknown parameter %q%s (it takes: %s)", name, suggest.Hint(name, known), strings.Join(known, ", "))
		}
		if msg := paramValue(name, t, s.Params[name]); msg != "" {
			return name, msg
		}
	}
	return "", ""
}

// paramTypes maps each parameter fault f takes (its json name) to its type.
func paramTypes(f faults.Fault) map[string]reflect.Type {
	t := reflect.TypeOf(f)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	takes := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return takes
	}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" && t.Field(i).IsExported() {
			takes[name] = t.Field(i).Type
		}
	}
	return takes
}

// paramValue says why v, as YAML decoded it, cannot be parameter name of
// type t; "" if it can.
func paramValue(name string, t reflect.Type, v any) string {
	if v == nil {
		return ""
	}
	if t == reflect.TypeFor[time.Duration]() {
		var d time.Duration
		switch v := v.(type) {
		case string:
			var err error
			if d, err = time.ParseDuration(v); err != nil {
				return fmt.Sprintf("must be a duration like 500ms or 2s, not %s", shown(v))
			}
		case int:
			d = time.Duration(v)
		default:
			return fmt.Sprintf("must be a duration like 500ms or 2s, not %s", shown(v))
		}
		switch {
		case d < 0 && name != "offset":
			return fmt.Sprintf("must be 0 or more, not %v", d)
		case d <= 0 && name == "timeout":
			return fmt.Sprintf("must be above 0, not %v (leave it out for the fault's default)", d)
		}
		return ""
	}
	ok := false
	switch t.Kind() {
	case reflect.Bool:
		_, ok = v.(bool)
	case reflect.String:
		_, ok = v.(string)
	case reflect.Int:
		_, ok = v.(int)
	case reflect.Float64:
		_, isInt := v.(int)
		_, isFloat := v.(float64)
		ok = isInt || isFloat
	case reflect.Slice:
		list, isList := v.([]any)
		ok = isList && !slices.ContainsFunc(list, func(e any) bool { _, s := e.(string); return !s })
		if !ok {
			return fmt.Sprintf("must be a list of node names, like [n1, n2], not %s", shown(v))
		}
	default:
		return ""
	}
	if !ok {
		return fmt.Sprintf("must be %s, not %s", scalarWords[t.Kind()], shown(v))
	}
	return ""
}

// shown says what a parameter's value is, as the file wrote it.
func shown(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}

// FaultKinds returns the fault kinds a scenario's steps may name, sorted:
// the registered faults, except the process pause the client faults are
// built on, and the client faults pause-client and kill-client.
func FaultKinds() []string {
	kinds := slices.DeleteFunc(faults.FaultKinds(), func(k string) bool { return k == "pause-process" })
	kinds = append(kinds, "pause-client", "kill-client")
	slices.Sort(kinds)
	return kinds
}

// The targets a step can name by the system's state instead of by name;
// the nemesis resolves them when the step fires.
const (
	// AimMaster is the current master: the node the sentinels name, else n1;
	// in a Redis Cluster, the primary serving the lock key's slot.
	AimMaster = "@master"
	// AimReplica is a node other than the current master, of a topology
	// with replicas; in a Redis Cluster, a replica of the key's primary.
	AimReplica = "@replica"
	// AimKeyHolder is a node on which the lock's key exists right now.
	AimKeyHolder = "@key-holder"
	// AimHolderResource is the path to the resource (r<p>) of the client
	// that holds the lock right now.
	AimHolderResource = "@holder-resource"
	// AimHolder, with pause-client or kill-client, is the isolated client
	// that holds the lock right now.
	AimHolder = "@holder"
	// AimLeader is the etcd member that is raft leader right now (of a
	// ZooKeeper ensemble: the member that leads).
	AimLeader = "@leader"
	// AimFollower is a running etcd member other than the leader, drawn
	// from the trial's seed.
	AimFollower = "@follower"
)

// Aimed reports whether the step names its target by the system's state.
func (s Step) Aimed() bool { return strings.HasPrefix(s.Node, "@") }

// validAim reports whether the aimed target fits the scenario.
func (s Scenario) validAim(st Step) string {
	switch {
	case ClientFault(st.Fault) && st.Node == AimHolder:
		if len(s.Isolate) == 0 {
			return "@holder needs isolated clients (isolate:)"
		}
		return ""
	case ClientFault(st.Fault):
		return fmt.Sprintf("%s aims only at @holder, not %q", st.Fault, st.Node)
	case st.Node == AimLeader, st.Node == AimFollower:
		if s.Topology.Etcd == 0 && s.Topology.ZooKeeper == 0 {
			return st.Node + " needs etcd or ZooKeeper members (topology: {etcd: 3} or {zookeeper: 3})"
		}
		return ""
	case s.Topology.ZooKeeper > 0 && st.Node != AimHolderResource:
		return fmt.Sprintf("%s names a Redis node; aim at ZooKeeper members with %s or %s", st.Node, AimLeader, AimFollower)
	case s.Topology.Postgres > 0 && st.Node != AimHolderResource:
		return fmt.Sprintf("%s names a Redis node; name PostgreSQL nodes p1..p%d", st.Node, s.Topology.Postgres)
	case s.Topology.Etcd > 0 && st.Node != AimHolderResource:
		return fmt.Sprintf("%s names a Redis node; aim at etcd members with %s or %s", st.Node, AimLeader, AimFollower)
	case st.Node == AimMaster, st.Node == AimKeyHolder, st.Node == AimHolderResource:
		return ""
	case st.Node == AimReplica:
		if s.Topology.Replicas == 0 {
			return "@replica needs a topology with replicas"
		}
		return ""
	}
	return fmt.Sprintf("unknown target %q (known: %s, %s, %s, %s, %s, %s; %s with pause-client)",
		st.Node, AimMaster, AimReplica, AimKeyHolder, AimHolderResource, AimLeader, AimFollower, AimHolder)
}

// Schedule lists the scenario's faults in words, e.g. "+300ms kill n1".
func (sc Scenario) Schedule() string {
	var b strings.Builder
	for i, s := range sc.Faults {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "+%v %s %s", s.At.D(), s.Fault, s.Target())
		if s.When != nil {
			fmt.Fprintf(&b, " when %s", s.When)
		}
		if s.For > 0 {
			fmt.Fprintf(&b, " for %v", s.For.D())
		}
	}
	return b.String()
}
