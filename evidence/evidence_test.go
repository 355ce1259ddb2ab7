package evidence_test

import (
	"strings"
	"testing"

	"github.com/lockpick/lockpick/checker"
	"github.com/lockpick/lockpick/evidence"
)

const sec = int64(1e9)

// history builds a history from a compact list: each op is process, f,
// completion type, and error, invoked at i s and completed 10ms later.
func history(ops ...op) checker.History {
	var h checker.History
	for i, o := range ops {
		t := int64(i+1) * sec
		h = append(h, checker.Event{Index: len(h), Process: o.p, Type: checker.Invoke, F: o.f, Key: "lock", Time: t})
		e := checker.Event{Index: len(h), Process: o.p, Type: o.typ, F: o.f, Key: "lock", Error: o.err, Time: t + 10e6}
		if o.typ == checker.OK && o.f == checker.FAcquire {
			e.ValidUntil = t + sec/2
		}
		h = append(h, e)
	}
	return h
}

type op struct {
	p   int
	f   string
	typ checker.Type
	err string
}

func ok(p int) op { return op{p, checker.FAcquire, checker.OK, ""} }

func refused(p int, err string) op { return op{p, checker.FAcquire, checker.Fail, err} }

// unknownRelease makes the failed releases of h end unknown (info).
func unknownRelease(h checker.History) checker.History {
	for i, e := range h {
		if e.F == checker.FRelease && e.Type == checker.Fail {
			h[i].Type = checker.Info
		}
	}
	return h
}

// release is p's release: ok without an error, failed with one.
func release(p int, err string) op {
	if err == "" {
		return op{p, checker.FRelease, checker.OK, ""}
	}
	return op{p, checker.FRelease, checker.Fail, err}
}

func secs(s float64) *float64 { return &s }

// heldLong gives every grant of h a 10s lease, so that it outlasts the
// history.
func heldLong(h checker.History) checker.History {
	for i := range h {
		if h[i].ValidUntil != 0 {
			h[i].ValidUntil = h[i].Time + 10*sec
		}
	}
	return h
}

func intp(n int) *int { return &n }

func TestEvaluate(t *testing.T) {
	fired := evidence.Fault{Step: 0, Fault: "kill", Target: "n1", Desc: "kill n1", At: 0.3, Fired: secs(0.31), Effect: "down"}
	for _, tc := range []struct {
		name    string
		in      evidence.Input
		reasons []string // substrings, one per expected reason; none: conclusive
	}{
		{name: "grants and a fault with its effect",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{fired}}},
		{name: "zero grants",
			in:      evidence.Input{History: history(refused(1, "boom"), refused(2, "boom"))},
			reasons: []string{"required at least 1 grant; found 0 grants"}},
		{name: "grants: 0 replaces the default",
			in: evidence.Input{History: history(refused(1, "held")), Require: []evidence.Requirement{{Grants: intp(0)}}}},
		{name: "a fault that never fired",
			in:      evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Step: 1, Fault: "kill", Target: "n1", Desc: "kill n1", At: 5}}},
			reasons: []string{"fault 2 (kill n1), due at +5.000s, never fired"}},
		{name: "a fault without its effect",
			in:      evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Desc: "clock jump +5s n3", Fired: secs(0.35), NoEffect: "TIME is 2ms off"}}},
			reasons: []string{"fault 1 (clock jump +5s n3) fired at +0.350s but had no effect: TIME is 2ms off"}},
		{name: "a failed injection and a failed heal",
			in: evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Desc: "pause c1", Error: "no such process"},
				{Step: 1, Desc: "latency r1", Fired: secs(1), Effect: "toxic", HealError: "toxic stuck"}}},
			reasons: []string{"fault 1 (pause c1) failed: no such process", "healing fault 2 (latency r1) failed: toxic stuck"}},
		{name: "an incomplete history",
			in:      evidence.Input{History: history(ok(1)), Result: checker.Result{Ignored: 2}},
			reasons: []string{"2 completions have no invoke"}},
		{name: "a problem of the harness",
			in:      evidence.Input{History: history(ok(1)), Problems: []string{"client 1's process exited early"}},
			reasons: []string{"client 1's process exited early"}},
		{name: "refused acquires",
			in: evidence.Input{History: history(ok(1), refused(2, "not acknowledged by enough replicas")),
				Require: []evidence.Requirement{{Refused: checker.FAcquire, Error: "acknowledged by enough replicas"}}}},
		{name: "too few refusals",
			in: evidence.Input{History: history(ok(1), refused(2, "other")),
				Require: []evidence.Requirement{{Refused: checker.FAcquire, Error: "acknowledged", Min: 1}}},
			reasons: []string{`required at least 1 acquire refused with "acknowledged"; found 0 refused`}},
		{name: "an operation that failed or ended unknown, in any words",
			in: evidence.Input{History: history(ok(1), op{2, checker.FAcquire, checker.Info, "timeout"}),
				Require: []evidence.Requirement{{Refused: checker.FAcquire}}}},
		{name: "an operation that ended unknown",
			in: evidence.Input{History: history(ok(1), refused(2, "taken"), op{2, checker.FAcquire, checker.Info, "timeout"}),
				Require: []evidence.Requirement{{Refused: checker.FAcquire, Unknown: true}}}},
		{name: "a refusal is not an unknown outcome",
			in: evidence.Input{History: history(ok(1), refused(2, "taken")),
				Require: []evidence.Requirement{{Refused: checker.FAcquire, Unknown: true}}},
			reasons: []string{`required at least 1 acquire ended unknown; found 0 refused`}},
		{name: "no operation failed",
			in:      evidence.Input{History: history(ok(1), ok(2)), Require: []evidence.Requirement{{Refused: checker.FAcquire, Min: 2}}},
			reasons: []string{`required at least 2 acquire failed or ended unknown; found 0 refused`}},
		{name: "grants after a fault",
			in: evidence.Input{History: history(ok(1), ok(2), ok(1)), Faults: []evidence.Fault{fired},
				Require: []evidence.Requirement{{Grants: intp(2), After: "kill n1"}}}},
		{name: "grants after a fault that never fired",
			in: evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Fault: "kill", Target: "n4", Desc: "kill n4", At: 1}},
				Require: []evidence.Requirement{{Grants: intp(1), After: "kill"}}},
			reasons: []string{"never fired", "required at least 1 grant after kill fired; found kill never fired"}},
		{name: "restarted node lost the key",
			in: evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Fault: "restart", Target: "n3", Desc: "restart n3", Fired: secs(0.35), KeyBefore: "held", KeyAfter: "absent"}},
				Require: []evidence.Requirement{{Fault: "restart", Node: "n3", KeyBefore: "held", KeyAfter: "absent"}}}},
		{name: "restarted node kept the key",
			in: evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Fault: "restart", Target: "n3", Desc: "restart n3", Fired: secs(0.35), KeyBefore: "held", KeyAfter: "held"}},
				Require: []evidence.Requirement{{Fault: "restart", Node: "n3", KeyAfter: "absent"}}},
			reasons: []string{"required restart n3: key absent after it; found key held when it hit, held after it"}},
		{name: "a power loss that dropped unsynced data",
			in: evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Fault: "power-loss", Target: "e1", Desc: "power loss e1", Fired: secs(0.5), KeyBefore: "held", Lost: int64p(8896)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "e1", KeyBefore: "held", Lost: "some"}}}},
		{name: "a power loss with nothing to drop",
			in: evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Fault: "power-loss", Target: "e1", Desc: "power loss e1", Fired: secs(0.5), KeyBefore: "held", Lost: int64p(0)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "e1", Lost: "some"}}},
			reasons: []string{"required power-loss e1: some unsynced data lost; found key held when it hit, unknown after it, nothing unsynced lost"}},
		{name: "the holder at a power loss released ok: the service served it again in time",
			in: evidence.Input{History: history(ok(1), release(1, ""), ok(2)), Faults: []evidence.Fault{{Fault: "power-loss", Target: "z1", Desc: "power loss z1", Fired: secs(1.2), Effective: secs(1.5)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "z1", HolderRelease: "ok"}}}},
		{name: "the holder's release was refused where ok was required",
			in: evidence.Input{History: history(ok(1), release(1, "could not connect to a server"), ok(2)), Faults: []evidence.Fault{{Fault: "power-loss", Target: "z1", Desc: "power loss z1", Fired: secs(1.2), Effective: secs(1.5)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "z1", HolderRelease: "ok"}}},
			reasons: []string{"required power-loss z1: the holder's release ok; found key unknown when it hit, unknown after it, holder c1's release invoked at +2.000s, after the node served again at +1.500s, ended fail at +2.010s: could not connect to a server"}},
		{name: "the holder's release refused as asked: the service forgot the grant",
			in: evidence.Input{History: history(ok(1), release(1, "lock not held"), ok(2)), Faults: []evidence.Fault{{Fault: "power-loss", Target: "z1", Desc: "power loss z1", Fired: secs(1.2), Effective: secs(1.5)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "z1", HolderRelease: "refused"}}}},
		{name: "a release that ended unknown is not refused",
			in: evidence.Input{History: unknownRelease(history(ok(1), release(1, "could not connect to a server"), ok(2))), Faults: []evidence.Fault{{Fault: "power-loss", Target: "z1", Desc: "power loss z1", Fired: secs(1.2), Effective: secs(1.5)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "z1", HolderRelease: "refused"}}},
			reasons: []string{"holder c1's release invoked at +2.000s, after the node served again at +1.500s, ended info at +2.010s"}},
		{name: "the holder let go before the node served again: its ok release proves nothing",
			in: evidence.Input{History: history(ok(1), release(1, ""), ok(2)), Faults: []evidence.Fault{{Fault: "power-loss", Target: "z1", Desc: "power loss z1", Fired: secs(1.2), Effective: secs(2.5)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "z1", HolderRelease: "ok"}}},
			reasons: []string{"holder c1's release invoked at +2.000s, before the node served again at +2.500s, ended ok at +2.010s"}},
		{name: "the node was never seen serving again",
			in: evidence.Input{History: history(ok(1), release(1, ""), ok(2)), Faults: []evidence.Fault{{Fault: "power-loss", Target: "z1", Desc: "power loss z1", Fired: secs(1.2)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "z1", HolderRelease: "ok"}}},
			reasons: []string{"the node was not seen serving again"}},
		{name: "at least one double grant, on any nodes, where there is none",
			in:      evidence.Input{History: history(ok(1), ok(2)), Require: []evidence.Requirement{{Anomaly: "double-grant", Min: 1}}},
			reasons: []string{"required at least 1 double-grant; found 0"}},
		{name: "no holder when the fault hit",
			in: evidence.Input{History: history(ok(1), release(1, ""), ok(2)), Faults: []evidence.Fault{{Fault: "power-loss", Target: "z1", Desc: "power loss z1", Fired: secs(0.5)}},
				Require: []evidence.Requirement{{Fault: "power-loss", Node: "z1", HolderRelease: "ok"}}},
			reasons: []string{"no client held the lock when it hit"}},
		{name: "a requirement on an aimed target matches what it resolved to",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "kill", Target: "n2", Aim: "@master", Desc: "kill n2 (@master)", Fired: secs(0.35), KeyBefore: "held"}},
				Require: []evidence.Requirement{{Fault: "kill", Node: "@master", KeyBefore: "held"}, {Grants: intp(1), After: "kill n2"}}}},
		{name: "a requirement on a node an aimed fault did not land on",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "kill", Target: "n1", Aim: "@master", Desc: "kill n1 (@master)", Fired: secs(0.35), KeyBefore: "held"}},
				Require: []evidence.Requirement{{Grants: intp(1), After: "kill n2"}}},
			reasons: []string{"found kill n2 never fired"}},
		{name: "a key requirement on a node an aimed fault did not land on",
			in: evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Fault: "kill", Target: "n1", Aim: "@master", Desc: "kill n1 (@master)", Fired: secs(0.35), KeyBefore: "held"}},
				Require: []evidence.Requirement{{Fault: "kill", Node: "n2", KeyBefore: "held"}}},
			reasons: []string{"found no kill landed on n2"}},
		{name: "a partition's key before",
			in: evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Fault: "partition", Target: "n1", Desc: "partition n1", Fired: secs(0.35), KeyBefore: "absent", KeyAfter: "absent"}},
				Require: []evidence.Requirement{{Fault: "partition", KeyBefore: "held"}}},
			reasons: []string{"required partition: key held when it hit; found key absent when it hit"}},
		{name: "grants after a fault count from its effect",
			in: evidence.Input{History: history(ok(1), ok(2), ok(1)), Faults: []evidence.Fault{{Fault: "sentinel-failover", Target: "n1", Desc: "sentinel failover n1", Fired: secs(0.5), Effective: secs(2.5), Effect: "sentinels now name n2 master"}},
				Require: []evidence.Requirement{{Grants: intp(2), After: "sentinel-failover"}}},
			reasons: []string{"found 1 grant"}},
		{name: "a heal that came late",
			in:      evidence.Input{History: history(ok(1)), Faults: []evidence.Fault{{Fault: "restart", Target: "n3", Desc: "restart n3", Fired: secs(0.3), Effect: "back", HealDue: secs(0.6), Healed: secs(2.3), HealLate: "began 1.7s late: its inject took until then"}}},
			reasons: []string{"fault 1 (restart n3) was due to heal at +0.600s but began 1.7s late: its inject took until then; healed at +2.300s"}},
		{name: "a late heal seen only by clients, none of whose operations was in flight",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "partition", Target: "n3", Desc: "partition client n3", Fired: secs(0.3), Effect: "cut",
				HealDue: secs(1.2), Healed: secs(1.5), HealLate: "began 300ms late: the heal itself woke late (a busy machine)", SeenBy: []int{1, 2}}}}},
		{name: "a late heal seen by a client whose operation was in flight",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "partition", Target: "n3", Desc: "partition client n3", Fired: secs(0.3), Effect: "cut",
				HealDue: secs(0.95), Healed: secs(1.005), HealLate: "began 55ms late: the heal itself woke late (a busy machine)", SeenBy: []int{1, 2}}}},
			reasons: []string{"fault 1 (partition client n3) was due to heal at +0.950s but began 55ms late"}},
		{name: "a late heal on one client's link, another client's operation in flight",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "partition", Target: "n3-c2", Desc: "partition client n3-c2", Fired: secs(0.3), Effect: "cut",
				HealDue: secs(0.95), Healed: secs(1.005), HealLate: "began 55ms late: the heal itself woke late (a busy machine)", SeenBy: []int{2}}}}},
		{name: "a late heal while an operation that never completed was in flight",
			in: evidence.Input{History: history(ok(1))[:1], Faults: []evidence.Fault{{Fault: "kill", Target: "n1", Desc: "kill n1", Fired: secs(0.3), Effect: "down",
				HealDue: secs(1.2), Healed: secs(1.5), HealLate: "began 300ms late: the heal itself woke late (a busy machine)", SeenBy: []int{1}}},
				Require: []evidence.Requirement{{Grants: intp(0)}}},
			reasons: []string{"was due to heal at +1.200s"}},
		{name: "a late client pause after another client was granted the lock",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.5), Effect: "stopped",
				HealDue: secs(2.5), Healed: secs(2.7), HealLate: "began 200ms late: the heal itself woke late (a busy machine)"}}}},
		{name: "a late client pause before anyone else was granted the lock",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.5), Effect: "stopped",
				HealDue: secs(1.9), Healed: secs(2.1), HealLate: "began 200ms late: the heal itself woke late (a busy machine)"}}},
			reasons: []string{"was due to heal at +1.900s"}},
		{name: "a late client pause, the frozen client acting at its thaw after the other's lease ended",
			in: evidence.Input{History: history(ok(1), ok(2), ok(1)), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.5), Effect: "stopped",
				HealDue: secs(2.3), Healed: secs(3.005), HealLate: "began 705ms late: the heal itself woke late (a busy machine)"}}},
			reasons: []string{"was due to heal at +2.300s"}},
		{name: "a late client pause, the frozen client acting at its thaw, nothing else changed",
			in: evidence.Input{History: heldLong(history(ok(1), ok(2), ok(1))), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.5), Effect: "stopped",
				HealDue: secs(2.5), Healed: secs(3.005), HealLate: "began 505ms late: the heal itself woke late (a busy machine)"}}}},
		{name: "a late client pause, the frozen client acting at its thaw, another client releasing meanwhile",
			in: evidence.Input{History: heldLong(history(ok(1), ok(2), release(2, ""), ok(1))), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.5), Effect: "stopped",
				HealDue: secs(2.5), Healed: secs(4.005), HealLate: "began 1.5s late: the heal itself woke late (a busy machine)"}}},
			reasons: []string{"was due to heal at +2.500s"}},
		{name: "a late client pause, the frozen client acting at its thaw, another fault firing meanwhile",
			in: evidence.Input{History: heldLong(history(ok(1), ok(2), ok(1))), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.5), Effect: "stopped",
				HealDue: secs(2.5), Healed: secs(3.005), HealLate: "began 505ms late: the heal itself woke late (a busy machine)"},
				{Step: 1, Fault: "kill", Target: "n1", Desc: "kill n1", Fired: secs(2.8), Effect: "down"}}},
			reasons: []string{"was due to heal at +2.500s"}},
		{name: "a late client pause of a client that held nothing",
			in: evidence.Input{History: history(ok(2), ok(2)), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.5), Effect: "stopped",
				HealDue: secs(2.5), Healed: secs(2.7), HealLate: "began 200ms late: the heal itself woke late (a busy machine)"}}},
			reasons: []string{"was due to heal at +2.500s"}},
		{name: "a late restart of a killed etcd member while the other two kept a quorum",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Step: 0, Fault: "kill", Target: "e2", Desc: "kill e2 (@leader)", Fired: secs(0.5), Effect: "down",
				HealDue: secs(2.5), Healed: secs(2.7), HealLate: "began 111ms late: the heal itself woke late (a busy machine)", Ensemble: []string{"e1", "e2", "e3"}}}}},
		{name: "a late restart of a killed etcd member while another was paused",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Step: 0, Fault: "kill", Target: "e2", Desc: "kill e2", Fired: secs(0.5), Effect: "down",
				HealDue: secs(2.5), Healed: secs(2.7), HealLate: "began 111ms late: the heal itself woke late (a busy machine)", Ensemble: []string{"e1", "e2", "e3"}},
				{Step: 1, Fault: "pause", Target: "e3", Desc: "pause e3", Fired: secs(2.6), Effect: "stopped", Healed: secs(3)}}},
			reasons: []string{"was due to heal at +2.500s"}},
		{name: "a late restart of a killed member of five while another was paused",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Step: 0, Fault: "kill", Target: "e2", Desc: "kill e2", Fired: secs(0.5), Effect: "down",
				HealDue: secs(2.5), Healed: secs(2.7), HealLate: "began 111ms late: the heal itself woke late (a busy machine)", Ensemble: []string{"e1", "e2", "e3", "e4", "e5"}},
				{Step: 1, Fault: "pause", Target: "e3", Desc: "pause e3", Fired: secs(1), Effect: "stopped", Healed: secs(2.55)}}}},
		{name: "a late restart of a killed etcd member during a peer partition",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Step: 0, Fault: "kill", Target: "e2", Desc: "kill e2", Fired: secs(0.5), Effect: "down",
				HealDue: secs(2.5), Healed: secs(2.7), HealLate: "began 111ms late: the heal itself woke late (a busy machine)", Ensemble: []string{"e1", "e2", "e3", "e4", "e5"}},
				{Step: 1, Fault: "peer-partition", Target: "e1", Desc: "peer-partition e1", Fired: secs(2), Effect: "cut"}}},
			reasons: []string{"was due to heal at +2.500s"}},
		{name: "a late restart of the only etcd member",
			in: evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Step: 0, Fault: "kill", Target: "e1", Desc: "kill e1", Fired: secs(0.5), Effect: "down",
				HealDue: secs(2.5), Healed: secs(2.7), HealLate: "began 111ms late: the heal itself woke late (a busy machine)", Ensemble: []string{"e1"}}}},
			reasons: []string{"was due to heal at +2.500s"}},
		{name: "anomaly on the wrong nodes",
			in: evidence.Input{History: history(ok(1), ok(2)), Result: checker.Result{Anomalies: []checker.Anomaly{{Kind: checker.DoubleGrant, Nodes: []string{"n1,n2,n3", "n2,n4,n5"}}}},
				Require: []evidence.Requirement{{Anomaly: "double-grant", Nodes: []string{"n3"}}}}},
		{name: "anomaly missing a node",
			in: evidence.Input{History: history(ok(1), ok(2)), Result: checker.Result{Anomalies: []checker.Anomaly{{Kind: checker.DoubleGrant, Nodes: []string{"n1", "n1"}}}},
				Require: []evidence.Requirement{{Anomaly: "double-grant", Nodes: []string{"n1", "n2"}}}},
			reasons: []string{"found involves n1"}},
		{name: "anomaly with min, none found",
			in:      evidence.Input{History: history(ok(1)), Require: []evidence.Requirement{{Anomaly: "double-grant", Nodes: []string{"n1"}, Min: 1}}},
			reasons: []string{"found 0"}},
		{name: "anomaly with min, found",
			in: evidence.Input{History: history(ok(1)), Result: checker.Result{Anomalies: []checker.Anomaly{{Kind: checker.DoubleGrant, Nodes: []string{"n1"}}}},
				Require: []evidence.Requirement{{Anomaly: "double-grant", Nodes: []string{"n1"}, Min: 1}}}},
		{name: "prevented stale write",
			in: evidence.Input{History: history(ok(1)), Result: checker.Result{Prevented: []checker.Anomaly{{Kind: checker.StaleWrite, Prevented: true}}},
				Require: []evidence.Requirement{{Prevented: "stale-write"}}}},
		{name: "no prevented stale write",
			in:      evidence.Input{History: history(ok(1)), Require: []evidence.Requirement{{Prevented: "stale-write"}}},
			reasons: []string{"found 0 prevented"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := evidence.Evaluate(tc.in)
			if got, want := ev.Conclusive, len(tc.reasons) == 0; got != want {
				t.Fatalf("conclusive = %v, want %v; reasons: %q", got, want, ev.Reasons)
			}
			if len(ev.Reasons) != len(tc.reasons) {
				t.Fatalf("reasons = %q, want %d containing %q", ev.Reasons, len(tc.reasons), tc.reasons)
			}
			for i, want := range tc.reasons {
				if !strings.Contains(ev.Reasons[i], want) {
					t.Errorf("reason %d = %q, want it to contain %q", i, ev.Reasons[i], want)
				}
			}
		})
	}
}

func TestEvaluate_Counts(t *testing.T) {
	ev := evidence.Evaluate(evidence.Input{History: history(ok(1), refused(2, "held"), ok(2), op{1, checker.FExtend, checker.OK, ""})})
	if ev.Grants[1] != 1 || ev.Grants[2] != 1 || ev.Attempts[2] != 2 || ev.Extends != 1 || ev.Events != 8 {
		t.Errorf("grants %v attempts %v extends %d events %d", ev.Grants, ev.Attempts, ev.Extends, ev.Events)
	}
	// Client 2 invoked at 2s, was refused, and was granted at 3.01s.
	if w := ev.LongestWait[2]; w < 1.009 || w > 1.011 {
		t.Errorf("longest wait of client 2 = %.3fs, want 1.010s", w)
	}
	if got, want := ev.Summary(), "2 grants to 2 of 2 clients (client 2 waited 1.0s), 1/1 requirements met"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}

func int64p(n int64) *int64 { return &n }

func TestRequirement_Validate(t *testing.T) {
	for _, tc := range []struct {
		r     evidence.Requirement
		field string // "" with valid false: a problem with no single field
		valid bool
	}{
		{r: evidence.Requirement{Grants: intp(3), After: "kill n4"}, valid: true},
		{r: evidence.Requirement{Fault: "restart", Node: "n3", KeyBefore: "held"}, valid: true},
		{r: evidence.Requirement{Fault: "kill", Node: "@master", KeyBefore: "held"}, valid: true},
		{r: evidence.Requirement{Grants: intp(1), Node: "@master"}, field: "node"},
		{r: evidence.Requirement{Anomaly: "double-grant", Nodes: []string{"n1"}}, valid: true},
		{r: evidence.Requirement{}},
		{r: evidence.Requirement{Grants: intp(1), Refused: "acquire"}},
		{r: evidence.Requirement{Grants: intp(-1)}, field: "grants"},
		{r: evidence.Requirement{Prevented: "stale-write", After: "kill"}, field: "after"},
		{r: evidence.Requirement{Refused: "acquire", After: "kill", Node: "n5"}, valid: true},
		{r: evidence.Requirement{Refused: "lock"}, field: "refused"},
		{r: evidence.Requirement{Refused: "acquire", Unknown: true}, valid: true},
		{r: evidence.Requirement{Grants: intp(1), Unknown: true}, field: "unknown"},
		{r: evidence.Requirement{Refused: "lost", Unknown: true}, field: "unknown"},
		{r: evidence.Requirement{Prevented: "double-grant"}, field: "prevented"},
		{r: evidence.Requirement{Fault: "restart"}, field: "fault"},
		{r: evidence.Requirement{Fault: "restart", KeyAfter: "gone"}, field: "key_after"},
		{r: evidence.Requirement{Anomaly: "double-grant"}, field: "nodes"},
		{r: evidence.Requirement{Anomaly: "double-grant", Min: 1}, valid: true},
		{r: evidence.Requirement{Anomaly: "split-brain", Nodes: []string{"n1"}}, field: "anomaly"},
		{r: evidence.Requirement{Refused: "acquire", KeyAfter: "held"}, field: "key_after"},
		{r: evidence.Requirement{Grants: intp(2), Min: 3}, field: "min"},
		{r: evidence.Requirement{Waited: "acquire", Max: "700ms"}, valid: true},
		{r: evidence.Requirement{Waited: "release", Max: "700ms"}, field: "waited"},
		{r: evidence.Requirement{Waited: "acquire"}, field: "max"},
		{r: evidence.Requirement{Waited: "acquire", Max: "-1s"}, field: "max"},
		{r: evidence.Requirement{Refused: "acquire", Max: "1s"}, field: "max"},
		{r: evidence.Requirement{Waited: "acquire", Max: "1s", Grants: intp(1)}},
		{r: evidence.Requirement{Fault: "power-loss", Node: "e1", Lost: "some"}, valid: true},
		{r: evidence.Requirement{Fault: "restart", Node: "e1", Lost: "some"}, field: "lost"},
		{r: evidence.Requirement{Fault: "power-loss", Node: "e1", Lost: "lots"}, field: "lost"},
		{r: evidence.Requirement{Fault: "power-loss", Node: "z1", HolderRelease: "ok"}, valid: true},
		{r: evidence.Requirement{Grants: intp(1), HolderRelease: "ok"}, field: "holder_release"},
		{r: evidence.Requirement{Fault: "power-loss", Node: "z1", HolderRelease: "fine"}, field: "holder_release"},
		{r: evidence.Requirement{Refused: "acquire", UntilGrant: "2s"}, valid: true},
		{r: evidence.Requirement{Refused: "lost", UntilGrant: "2s"}, field: "until_grant"},
		{r: evidence.Requirement{Grants: intp(0), UntilGrant: "2s"}, field: "until_grant"},
		{r: evidence.Requirement{Refused: "acquire", UntilGrant: "0s"}, field: "until_grant"},
	} {
		field, msg := tc.r.Validate()
		if (msg == "") != tc.valid || field != tc.field {
			t.Errorf("Validate(%+v) = %q, %q; want field %q, valid %v", tc.r, field, msg, tc.field, tc.valid)
		}
	}
}

func TestEvaluate_GrantsOnNode(t *testing.T) {
	h := history(ok(1), ok(2), ok(1))
	h[1].Node, h[3].Node, h[5].Node = "n2", "n5", "n1,n5,n3"
	for _, tc := range []struct {
		want   int
		reason string
	}{{2, ""}, {3, "required at least 3 grants on n5; found 2 grants"}} {
		ev := evidence.Evaluate(evidence.Input{History: h, Require: []evidence.Requirement{{Grants: intp(tc.want), Node: "n5"}}})
		got := strings.Join(ev.Reasons, "; ")
		if (tc.reason == "") != ev.Conclusive || !strings.Contains(got, tc.reason) {
			t.Errorf("grants: %d on n5: conclusive %v, reasons %q; want %q", tc.want, ev.Conclusive, got, tc.reason)
		}
	}
	if field, _ := (evidence.Requirement{Prevented: "stale-write", Node: "n5"}).Validate(); field != "node" {
		t.Errorf("node with prevented validated (field %q)", field)
	}
	h[1].Type, h[1].Error = checker.Fail, "refused by WAIT"
	h[3].Type, h[3].Error = checker.Fail, "refused by WAIT"
	ev := evidence.Evaluate(evidence.Input{History: h, Require: []evidence.Requirement{{Refused: "acquire", Error: "WAIT", Node: "n5", Min: 2}}})
	if got := strings.Join(ev.Reasons, "; "); !strings.Contains(got, `required at least 2 acquire refused with "WAIT" on n5; found 1 refused`) {
		t.Errorf("refused on n5: %q", got)
	}
}

// TestEvaluate_Waited: every acquire, granted or given up, must return
// within max of its invoke; a late grant, or no acquire at all, fails it.
func TestEvaluate_Waited(t *testing.T) {
	// acquires of process 2 lasting 500ms (given up), 500ms, then the
	// given duration (granted)
	h := func(last int64) checker.History {
		var h checker.History
		at := int64(0)
		for i, d := range []int64{500e6, 500e6, last} {
			typ, err := checker.Fail, "context deadline exceeded"
			if i == 2 {
				typ, err = checker.OK, ""
			}
			h = append(h, checker.Event{Index: len(h), Process: 2, Type: checker.Invoke, F: checker.FAcquire, Key: "lock", Time: at},
				checker.Event{Index: len(h) + 1, Process: 2, Type: typ, F: checker.FAcquire, Key: "lock", Error: err, Time: at + d, ValidUntil: at + d + sec})
			at += d + 50e6
		}
		return h
	}
	req := []evidence.Requirement{{Grants: intp(0)}, {Waited: "acquire", Max: "600ms"}}
	for _, tc := range []struct {
		name   string
		h      checker.History
		reason string // "" for conclusive
	}{
		{"in time", h(200e6), ""},
		{"granted late", h(900e6), "required every acquire returned within 600ms; found the longest, process 2's (ok), returned after 900ms"},
		{"no acquire", nil, "found no acquire completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := evidence.Evaluate(evidence.Input{History: tc.h, Require: req})
			got := strings.Join(ev.Reasons, "; ")
			if (tc.reason == "") != ev.Conclusive || !strings.Contains(got, tc.reason) {
				t.Errorf("conclusive %v, reasons %q; want %q", ev.Conclusive, got, tc.reason)
			}
		})
	}
}

// until_grant counts the refusals before the first grant, and asks that
// they span the duration: a livelock that ended too soon is no proof.
func TestEvaluate_UntilGrant(t *testing.T) {
	split := "1 of 3 nodes granted"
	req := []evidence.Requirement{{Grants: intp(0)}, {Refused: "acquire", Error: split, Min: 2, UntilGrant: "2s"}}
	for _, tc := range []struct {
		name   string
		h      checker.History // one op a second, each 10ms long
		reason string          // "" for conclusive
	}{
		{"never granted", history(refused(1, split), refused(2, split), refused(3, split)), ""},
		{"granted after 2s of split votes", history(refused(1, split), refused(2, split), refused(3, split), ok(1), refused(2, split)), ""},
		{"granted too soon", history(refused(1, split), refused(2, split), ok(3), refused(1, split), refused(2, split), refused(1, split)),
			"found 2 refused over 1.01s before the first grant"},
		{"other refusals", history(refused(1, split), refused(2, "held"), refused(3, "held")),
			"found 1 refused over 10ms before the first grant (nobody was granted it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := evidence.Evaluate(evidence.Input{History: tc.h, Require: req})
			got := strings.Join(ev.Reasons, "; ")
			if (tc.reason == "") != ev.Conclusive || !strings.Contains(got, tc.reason) {
				t.Errorf("conclusive %v, reasons %q; want %q", ev.Conclusive, got, tc.reason)
			}
		})
	}
}

// A late client pause that met nothing says why in its note.
func TestEvaluate_LatePauseNote(t *testing.T) {
	ev := evidence.Evaluate(evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.4), Effective: secs(1.5), Effect: "stopped",
		HealDue: secs(2.5), Healed: secs(2.7), HealLate: "began 200ms late: the heal itself woke late (a busy machine)"}}})
	want := "fault 1 (pause client c1) healed at +2.700s, 200ms after it was due, while no operation of client 1 was in flight, and the lock had passed to client 2 at +2.010s while client 1 was frozen (since +1.500s): the lateness met nothing"
	if !ev.Conclusive || len(ev.Notes) != 1 || ev.Notes[0] != want {
		t.Errorf("conclusive %v, notes %q; want conclusive with note %q", ev.Conclusive, ev.Notes, want)
	}
}

// A late heal that met nothing is not a reason but a note that says so.
func TestEvaluate_LateHealNote(t *testing.T) {
	ev := evidence.Evaluate(evidence.Input{History: history(ok(1), ok(2)), Faults: []evidence.Fault{{Fault: "partition", Target: "n3", Desc: "partition client n3", Fired: secs(0.3), Effect: "cut",
		HealDue: secs(1.2), Healed: secs(1.5), HealLate: "began 300ms late: the heal itself woke late (a busy machine)", SeenBy: []int{1, 2}}}})
	want := "fault 1 (partition client n3) healed at +1.500s, 300ms after it was due, while no operation of clients 1 and 2 was in flight: the lateness met nothing"
	if !ev.Conclusive || len(ev.Notes) != 1 || ev.Notes[0] != want {
		t.Errorf("conclusive %v, notes %q; want conclusive with note %q", ev.Conclusive, ev.Notes, want)
	}
}

// A late client pause whose client acted at its thaw, with nothing else
// changed meanwhile, met nothing either, and its note says why.
func TestEvaluate_LatePauseUnchangedNote(t *testing.T) {
	ev := evidence.Evaluate(evidence.Input{History: heldLong(history(ok(1), ok(2), ok(1))), Faults: []evidence.Fault{{Fault: "pause-client", Target: "c1", Desc: "pause client c1", Fired: secs(1.5), Effect: "stopped",
		HealDue: secs(2.5), Healed: secs(3.005), HealLate: "began 505ms late: the heal itself woke late (a busy machine)"}}})
	want := "fault 1 (pause client c1) healed at +3.005s, 505ms after it was due, and the lock had passed to client 2 at +2.010s while client 1 was frozen (since +1.500s), and nothing changed meanwhile (no other client's grant, release, extend or write completed, no lease ended, no other fault acted): thawed on time, client 1 would have met the same lock: the lateness met nothing"
	if !ev.Conclusive || len(ev.Notes) != 1 || ev.Notes[0] != want {
		t.Errorf("conclusive %v, notes %q; want conclusive with note %q", ev.Conclusive, ev.Notes, want)
	}
}
