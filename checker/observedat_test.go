package checker

import "testing"

func TestObservedAt_IsTheLatestEventTheAnomalyNames(t *testing.T) {
	h := History{{Index: 0, Time: 10}, {Index: 1, Time: 30}, {Index: 2, Time: 20}}
	if at, ok := ObservedAt(h, Anomaly{Kind: LostUpdate, Ops: []int{0, 2}}); !ok || at != 20 {
		t.Errorf("ObservedAt(ops 0, 2) = %d, %v; want 20, true", at, ok)
	}
	if _, ok := ObservedAt(h, Anomaly{Kind: LostUpdate, Ops: []int{7}}); ok {
		t.Error("ObservedAt of an event not in the history: found")
	}
}

func TestObservedAt_DoubleGrantIsTheFirstOverlap(t *testing.T) {
	h := History{{Index: 0, Time: 10}, {Index: 1, Time: 90}}
	a := Anomaly{Kind: DoubleGrant, Ops: []int{0, 1}, Windows: []Window{
		{Process: 1, Start: 10, End: 50}, {Process: 1, Start: 50, End: 90}, {Process: 2, Start: 40, End: 60}}}
	if at, ok := ObservedAt(h, a); !ok || at != 40 {
		t.Errorf("ObservedAt(double grant) = %d, %v; want 40 (process 2's grant inside process 1's first window)", at, ok)
	}
}
