package redisnum

import (
	"math"
	"testing"
)

// What Redis's string2ll and string2d accept and refuse (the exec and
// proxy differential tests compare the commands using them with
// redis-server; these pin the edges).
func TestParseIntAsString2ll(t *testing.T) {
	ok := map[string]int64{"0": 0, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63, "10": 10}
	for s, want := range ok {
		if got, good := ParseInt([]byte(s)); !good || got != want {
			t.Errorf("ParseInt(%q) = %d %v, want %d", s, got, good, want)
		}
	}
	for _, s := range []string{"", "-", "+1", " 1", "01", "-0", "9223372036854775808", "-9223372036854775809", "1.0", "1e3", "0x10"} {
		if got, good := ParseInt([]byte(s)); good {
			t.Errorf("ParseInt(%q) = %d, want refused", s, got)
		}
	}
}

func TestParseFloatAsString2d(t *testing.T) {
	ok := map[string]float64{"1.5": 1.5, "-0": 0, "+1": 1, "1e3": 1000, "0x10": 16, ".5": 0.5, "5.": 5, "inf": inf(), "-Infinity": -inf()}
	for s, want := range ok {
		if got, good := ParseFloat([]byte(s)); !good || got != want {
			t.Errorf("ParseFloat(%q) = %v %v, want %v", s, got, good, want)
		}
	}
	for _, s := range []string{"", " 1", "nan", "NaN", "1_0", "1e400", "1e-400", "abc", "1e"} {
		if got, good := ParseFloat([]byte(s)); good {
			t.Errorf("ParseFloat(%q) = %v, want refused", s, got)
		}
	}
}

func inf() float64 { return math.Inf(1) }
