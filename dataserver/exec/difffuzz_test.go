package exec

// Cases found by the differential fuzzer (tests/difffuzz), pinned here at
// the unit level too.

import (
	"math"
	"testing"
)

var inf = math.Inf(1)

// TestParseFloatAsStrtod: scores parse as Redis's strtod-based
// getDoubleFromObject: hex floats without an exponent, no digit
// separators, underflow to zero refused.
func TestParseFloatAsStrtod(t *testing.T) {
	ok := map[string]float64{"0x10": 16, "-0x10": -16, "0x1.8": 1.5, "0X1P3": 8, "0x.8": 0.5, "0e-400": 0,
		"1e-320": 1e-320, "inf": inf, "-inf": -inf, "+inf": inf, ".5": 0.5, "5.": 5, "0": 0, "-0": 0}
	for s, want := range ok {
		got, valid := ParseFloat([]byte(s))
		if !valid || got != want {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v", s, got, valid, want)
		}
	}
	for _, s := range []string{"1e-400", "0x1p-1100", "0x1_0p0", "1_0", "0x", "0x1p99999", " 1", "1 ", "nan", "", "1e309", "abc"} {
		if got, valid := ParseFloat([]byte(s)); valid {
			t.Errorf("ParseFloat(%q) = %v, valid; want refused", s, got)
		}
	}
}
