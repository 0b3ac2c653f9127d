package zsetop

import (
	"math"
	"reflect"
	"testing"
)

func TestAggregateAsRedis(t *testing.T) {
	negZero := math.Copysign(0, -1)
	if v := Aggregate(Min, 0, negZero); math.Signbit(v) {
		t.Errorf("MIN(0, -0) = -0, Redis keeps 0")
	}
	if v := Aggregate(Max, negZero, 0); !math.Signbit(v) {
		t.Errorf("MAX(-0, 0) = 0, Redis keeps -0")
	}
	if v := Aggregate(Min, 5, math.NaN()); v != 5 {
		t.Errorf("MIN(5, NaN) = %v, want 5", v)
	}
	if v := Aggregate(Sum, math.Inf(1), math.Inf(-1)); v != 0 {
		t.Errorf("SUM(inf, -inf) = %v, want 0", v)
	}
	if v := Weighted(0, math.Inf(1)); v != 0 {
		t.Errorf("0 × inf = %v, want 0", v)
	}
	if got := BySize([]int{3, 1, 2, 1}); !reflect.DeepEqual(got, []int{1, 3, 2, 0}) {
		t.Errorf("BySize = %v", got)
	}
}
