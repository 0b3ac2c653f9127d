package engines

import (
	"math"
	"testing"
)

func TestNextVersionWrapsSkippingZero(t *testing.T) {
	for v, want := range map[int64]int64{0: 1, 1: 2, math.MaxInt64 - 1: math.MaxInt64, math.MaxInt64: 1} {
		if got := NextVersion(v); got != want {
			t.Errorf("NextVersion(%d) = %d, want %d", v, got, want)
		}
	}
}
