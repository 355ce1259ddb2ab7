package checker

import (
	"fmt"
	"strings"
	"time"
)

// clock formats monotonic times relative to an origin.
type clock int64

// at returns t as "+1.204s" relative to the origin.
func (c clock) at(t int64) string {
	return fmt.Sprintf("%+.3fs", float64(t-int64(c))/1e9)
}

// dur formats a nanosecond duration rounded to a readable unit.
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// on returns " on n1", or "" for an unknown node.
func on(node string) string {
	if node == "" {
		return ""
	}
	return " on " + node
}

// nodes returns the distinct non-empty nodes, in order.
func nodes(ns ...string) []string {
	var out []string
	for _, n := range ns {
		if n != "" && !contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// joinInts returns "1, 2 and 3".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return joinStrings(s)
}

// joinStrings returns "a, b and c".
func joinStrings(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
