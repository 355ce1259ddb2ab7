package checker

import "time"

// LeaseModelVerdicts runs the porcupine lease model on every lock key of h,
// including those where the interval check found a double grant, so tests
// can check that the two agree.
func LeaseModelVerdicts(h History, timeout time.Duration) map[string]Verdict {
	r := newRun(h, nil)
	var ps []*part
	for _, p := range r.parts() {
		if p.lease {
			ps = append(ps, p)
		}
	}
	search(ps, timeout)
	out := make(map[string]Verdict)
	for _, p := range ps {
		out[p.key] = map[string]Verdict{"Ok": Ok, "Illegal": Illegal, "Unknown": Unknown}[string(p.res)]
	}
	return out
}
