// Package zsetop holds the arithmetic of ZUNION/ZINTER (and their STORE
// forms) exactly as Redis's zunionInterDiffGenericCommand does it, for the
// dataservers (keys of one bucket) and the proxy (keys gathered from
// several) alike, so that both give Redis's scores; and the member
// algebra of SUNION, SINTER and SDIFF (members.go), for both as well.
package zsetop

import (
	"math"
	"sort"
)

// Aggregation is AGGREGATE's choice.
const (
	Sum = 0
	Min = 1
	Max = 2
)

// Weighted is a source's first score times its weight, a NaN (0 × inf)
// taken as 0, as Redis does for the value a member starts with.
func Weighted(score, weight float64) float64 {
	v := score * weight
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// Aggregate folds val into acc as zunionInterAggregate: SUM adds (a NaN
// sum, inf + -inf, taken as 0); MIN and MAX keep acc unless val is
// strictly less (more), so -0 and 0 stay as they came and a NaN val never
// wins (math.Min and math.Max would differ on both).
func Aggregate(agg int, acc, val float64) float64 {
	switch agg {
	case Min:
		if val < acc {
			return val
		}
		return acc
	case Max:
		if val > acc {
			return val
		}
		return acc
	}
	s := acc + val
	if math.IsNaN(s) {
		return 0
	}
	return s
}

// BySize returns the sources' indexes from the smallest to the largest
// (equal sizes in their order), the order Redis walks them in for ZUNION
// and ZINTER.
func BySize(sizes []int) []int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return sizes[order[a]] < sizes[order[b]] })
	return order
}
