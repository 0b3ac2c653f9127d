package proxy

import (
	"math"
	"testing"
	"time"
)

// A client's timeout in milliseconds may be any long long: the largest
// ones cap at the longest Duration instead of overflowing into one that
// has already passed (WAIT 2 9223372036854775807 must wait, not return).
func TestMillisCaps(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want time.Duration
	}{
		{1, time.Millisecond},
		{1500, 1500 * time.Millisecond},
		{math.MaxInt64 / int64(time.Millisecond), time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond},
		{math.MaxInt64/int64(time.Millisecond) + 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
	} {
		if got := millis(c.in); got != c.want || got <= 0 {
			t.Errorf("millis(%d) = %v, want %v", c.in, got, c.want)
		}
	}
}
