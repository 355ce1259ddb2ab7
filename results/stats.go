package results

import (
	"math"
	"slices"
)

// Wilson returns the 95% Wilson score interval for k successes in n trials,
// as proportions in [0, 1]. With n == 0 it returns 0, 1.
func Wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054 // 97.5th percentile of the standard normal
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, center-half), math.Min(1, center+half)
}

// FisherExact returns the two-sided p-value of Fisher's exact test on the
// 2×2 table [[a, b], [c, d]]: the probability, with the margins fixed, of a
// table at least as unlikely as the observed one.
func FisherExact(a, b, c, d int) float64 {
	row1, col1, n := a+b, a+c, a+b+c+d
	lo, hi := max(0, col1-(n-row1)), min(row1, col1)
	pObs := hypergeom(a, row1, col1, n)
	p := 0.0
	for x := lo; x <= hi; x++ {
		if px := hypergeom(x, row1, col1, n); px <= pObs*(1+1e-7) {
			p += px
		}
	}
	return math.Min(1, p)
}

// hypergeom is P(X = x) for the top-left cell given the margins.
func hypergeom(x, row1, col1, n int) float64 {
	return math.Exp(lchoose(row1, x) + lchoose(n-row1, col1-x) - lchoose(n, col1))
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// Median returns the middle of xs (the mean of the two middle ones for an
// even count), 0 for none.
func Median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
