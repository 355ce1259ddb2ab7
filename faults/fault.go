package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockpick/lockpick/cluster"
	"github.com/lockpick/lockpick/internal/suggest"
)

// A Fault is one thing that can go wrong with a node. Inject makes it
// happen; Heal undoes it and is idempotent, so a run can heal everything at
// the end without tracking what is still broken. Faults with parameters
// keep them in exported fields with json tags, so a scenario file can name
// them (see [NewFault]).
type Fault interface {
	Inject(ctx context.Context, n *cluster.Node) error
	Heal(ctx context.Context, n *cluster.Node) error
}

// A Describer is a [Fault] that can say what it does in a few words, for
// histories and reports.
type Describer interface {
	Describe() string
}

// Describe returns f's description followed by the node's name, e.g.
// "latency 200ms±50ms both n1". A fault without Describe is named by its type.
func Describe(f Fault, n *cluster.Node) string {
	d := strings.TrimPrefix(fmt.Sprintf("%T", f), "*faults.")
	if ds, ok := f.(Describer); ok {
		d = ds.Describe()
	}
	if n == nil {
		return d
	}
	return d + " " + n.Name
}

// A Verifier is a Fault that can check, right after Inject returned nil,
// that its effect is really in place, and say what it saw.
type Verifier interface {
	// Verify returns what it observed, e.g. "down", "clock +5.001s (read
	// back with TIME)", or an error saying why the effect is absent.
	Verify(ctx context.Context, n *cluster.Node) (string, error)
}

// Verify checks that f's effect on n is in place (see [Verifier]) and
// returns what it observed. It returns ("", nil) for a fault that is not a
// Verifier, an error wrapping [ErrNoEffect] when the effect is absent, and
// another error when it could not look.
func Verify(ctx context.Context, f Fault, n *cluster.Node) (effect string, err error) {
	v, ok := f.(Verifier)
	if !ok {
		return "", nil
	}
	effect, err = v.Verify(ctx, n)
	if err != nil {
		return "", fmt.Errorf("verify %s: %w", Describe(f, n), err)
	}
	return effect, nil
}

// A Placer is a [Fault] that can act only on some nodes, or only in some
// topologies. Place returns why it cannot act on the node named node of t,
// or nil; node is "" when it is chosen as the fault fires.
type Placer interface {
	Place(t cluster.Topology, node string) error
}

// Place reports, before anything runs, why f cannot act on the node named
// node of t, in words that follow the fault's kind ("needs sentinels");
// nil for a fault that is not a [Placer] or that fits.
func Place(f Fault, t cluster.Topology, node string) error {
	if p, ok := f.(Placer); ok {
		return p.Place(t.WithDefaults(), node)
	}
	return nil
}

// onRedisNode returns nil if node is "" or one of t's Redis nodes n1..nN,
// and otherwise an error saying a process fault needs one.
func onRedisNode(t cluster.Topology, node string) error {
	if t.ZooKeeper > 0 {
		return fmt.Errorf("acts on a Redis node, and a ZooKeeper topology has none (z1..z%d are ZooKeeper members)", t.ZooKeeper)
	}
	if t.Postgres > 0 {
		return fmt.Errorf("acts on a Redis node, and a PostgreSQL topology has none (p1..p%d are PostgreSQL nodes)", t.Postgres)
	}
	if t.Etcd > 0 {
		return fmt.Errorf("acts on a Redis node, and an etcd topology has none (e1..e%d are etcd members)", t.Etcd)
	}
	if node == "" || t.NodeIndex(node) > 0 {
		return nil
	}
	return fmt.Errorf("acts on a Redis node's process (n1..n%d), not %q", t.NodeCount(), node)
}

// onProcess returns nil if node is "" or a process of t: a Redis node
// n1..nN, an etcd member e1..eN of an etcd topology, a PostgreSQL node
// p1..pN of a PostgreSQL topology, or a ZooKeeper member z1..zN.
func onProcess(t cluster.Topology, node string) error {
	if t.ZooKeeper > 0 {
		if node == "" || t.ZooKeeperIndex(node) > 0 {
			return nil
		}
		return fmt.Errorf("acts on a ZooKeeper member's process (z1..z%d), not %q", t.ZooKeeper, node)
	}
	if t.Postgres > 0 {
		if node == "" || t.PostgresIndex(node) > 0 {
			return nil
		}
		return fmt.Errorf("acts on a PostgreSQL node's process (p1..p%d), not %q", t.Postgres, node)
	}
	if t.Etcd == 0 {
		return onRedisNode(t, node)
	}
	if node == "" || t.EtcdIndex(node) > 0 {
		return nil
	}
	return fmt.Errorf("acts on an etcd member's process (e1..e%d), not %q", t.Etcd, node)
}

// underClockShim returns nil if node is "" or a process of t the clock
// shim reaches (see [onProcess]): a Redis node, a ZooKeeper member (a
// JVM, which reads both clocks through libc) or a PostgreSQL node. etcd
// is a Go program: it reads its clocks through the vDSO, past the shim.
func underClockShim(t cluster.Topology, node string) error {
	if t.Etcd > 0 {
		return errors.New("cannot reach etcd members: etcd is a Go program, which bypasses libc and so the clock shim")
	}
	return onProcess(t, node)
}

// clockRateOnRedis returns why a clock rate cannot be played on t's node
// (it is read back with Redis's TIME, twice 200ms apart: a ZooKeeper
// member's or a PostgreSQL node's clock read is too coarse for that), or
// nil for a Redis node.
func clockRateOnRedis(t cluster.Topology, node string) error {
	switch {
	case t.ZooKeeper > 0:
		return errors.New("acts on a Redis node: lockpick reads a clock rate back with Redis's TIME, and a ZooKeeper member has none (clock-jump moves a member's wall clock)")
	case t.Postgres > 0:
		return errors.New("acts on a Redis node: lockpick reads a clock rate back with Redis's TIME, and a PostgreSQL node has none (clock-jump moves a node's wall clock)")
	case t.Etcd > 0:
		return underClockShim(t, node)
	}
	return onRedisNode(t, node)
}

// inRedisCluster returns nil for a Redis node of a Redis Cluster topology.
func inRedisCluster(t cluster.Topology, node string) error {
	if t.Shards == 0 {
		return errors.New("needs a Redis Cluster (topology.shards)")
	}
	return onRedisNode(t, node)
}

// onReplica returns nil for a node that starts as a replica of t, or "".
func onReplica(t cluster.Topology, node string) error {
	switch {
	case t.Replicas == 0:
		return errors.New("needs a topology with replicas (topology.replicas)")
	case node != "" && !t.IsReplica(node):
		if err := onRedisNode(t, node); err != nil {
			return err
		}
		return fmt.Errorf("acts on a replica, and %s starts as a master", node)
	}
	return nil
}

var (
	registryMu sync.RWMutex
	registry   = map[string]func() Fault{}
)

// RegisterFault makes a fault kind known to [NewFault]. newFault returns a
// pointer to a fresh, zero-configured fault. Registering a kind twice panics.
func RegisterFault(kind string, newFault func() Fault) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, ok := registry[kind]; ok {
		panic("cluster: fault kind registered twice: " + kind)
	}
	registry[kind] = newFault
}

// FaultKinds returns the registered fault kinds, sorted.
func FaultKinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	kinds := make([]string, 0, len(registry))
	for k := range registry {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// NewFault returns a fault of the registered kind ("kill", "latency", ...)
// configured from params, keyed by the fields' json names as a YAML or JSON
// scenario file spells them. A time.Duration parameter is a string
// ("250ms", "-20s") or a number of nanoseconds. It returns [ErrUnknownFault]
// for an unknown kind and [cluster.ErrBadFault] for an unknown or ill-typed parameter.
func NewFault(kind string, params map[string]any) (Fault, error) {
	registryMu.RLock()
	mk, ok := registry[kind]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q (known: %s)", ErrUnknownFault, kind, strings.Join(FaultKinds(), ", "))
	}
	f := mk()
	if len(params) == 0 {
		return f, nil
	}
	params, err := parseDurations(f, params)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", cluster.ErrBadFault, kind, err)
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", cluster.ErrBadFault, kind, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", cluster.ErrBadFault, kind, paramError(f, err))
	}
	return f, nil
}

var jsonUnknownField = regexp.MustCompile(`^json: unknown field "(.*)"$`)

// paramError words a decoding error of f's parameters for a scenario file:
// an unknown parameter is named with the closest one f takes.
func paramError(f Fault, err error) string {
	m := jsonUnknownField.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	var names []string
	t := reflect.TypeOf(f)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("unknown parameter %q: it takes none", m[1])
	}
	return fmt.Sprintf("unknown parameter %q%s (it takes: %s)", m[1], suggest.Hint(m[1], names), strings.Join(names, ", "))
}

// parseDurations replaces string values of time.Duration fields with
// nanoseconds, which is what encoding/json wants.
func parseDurations(f Fault, params map[string]any) (map[string]any, error) {
	t := reflect.TypeOf(f)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return params, nil
	}
	out := make(map[string]any, len(params))
	for k, v := range params {
		out[k] = v
	}
	for i := range t.NumField() {
		fld := t.Field(i)
		name, _, _ := strings.Cut(fld.Tag.Get("json"), ",")
		if fld.Type != reflect.TypeFor[time.Duration]() || name == "" {
			continue
		}
		if s, ok := out[name].(string); ok {
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", name, err)
			}
			out[name] = int64(d)
		}
	}
	return out, nil
}

// Inject injects f into the node, sentinel or service of c named node. It
// returns [cluster.ErrNoSuchNode] for an unknown name and f's error otherwise.
func Inject(ctx context.Context, c *cluster.Cluster, f Fault, node string) error {
	n, err := c.Node(node)
	if err != nil {
		return err
	}
	if err := f.Inject(ctx, n); err != nil {
		return fmt.Errorf("inject %s: %w", Describe(f, n), err)
	}
	return nil
}

// Heal heals f on the node of c named node, as [Inject] injected it.
func Heal(ctx context.Context, c *cluster.Cluster, f Fault, node string) error {
	n, err := c.Node(node)
	if err != nil {
		return err
	}
	if err := f.Heal(ctx, n); err != nil {
		return fmt.Errorf("heal %s: %w", Describe(f, n), err)
	}
	return nil
}

// procOf returns the node's process or [cluster.ErrNoProcess].
func procOf(n *cluster.Node) (cluster.Proc, error) {
	if n == nil || n.Proc == nil {
		return nil, fmt.Errorf("%w: %s", cluster.ErrNoProcess, nodeName(n))
	}
	return n.Proc, nil
}

func nodeName(n *cluster.Node) string {
	if n == nil {
		return "<nil>"
	}
	return n.Name
}

// port returns the port of host:port.
func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
