package results_test

import (
	"math"
	"testing"

	"github.com/lockpick/lockpick/results"
)

func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.2775},      // standard tables
		{10, 10, 0.7225, 1},     // symmetric to the above
		{5, 10, 0.2366, 0.7634}, // p = 0.5
		{81, 263, 0.2553, 0.3662},
	} {
		lo, hi := results.Wilson(tc.k, tc.n)
		if math.Abs(lo-tc.lo) > 5e-4 || math.Abs(hi-tc.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestFisherExact(t *testing.T) {
	for _, tc := range []struct {
		a, b, c, d int
		want       float64
	}{
		{1, 9, 11, 3, 0.002759},  // the classic example (two-sided)
		{3, 1, 1, 3, 0.4857},     // the tea-tasting lady
		{10, 0, 0, 10, 1.083e-5}, // perfect separation
		{5, 5, 5, 5, 1},
	} {
		got := results.FisherExact(tc.a, tc.b, tc.c, tc.d)
		if math.Abs(got-tc.want) > tc.want*1e-3 {
			t.Errorf("FisherExact(%d,%d,%d,%d) = %.6g, want %.6g", tc.a, tc.b, tc.c, tc.d, got, tc.want)
		}
	}
}
