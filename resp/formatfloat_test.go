package resp

import (
	"math"
	"testing"
)

// FormatFloat follows Redis 7.2's d2string: whole numbers within ±2^62
// as integers, signed zero, else the shortest round-trip form.
func TestFormatFloatAsRedis72(t *testing.T) {
	cases := map[float64]string{
		1000000:                "1000000",
		1e15:                   "1000000000000000",
		3377785620988224:       "3377785620988224",
		1e17:                   "100000000000000000",
		-1e17:                  "-100000000000000000",
		1 << 62:                "4611686018427387904",
		1e19:                   "1e+19",
		0.1:                    "0.1",
		1.5:                    "1.5",
		-2.5e-5:                "-2.5e-05",
		0:                      "0",
		math.Copysign(0, -1):   "-0",
		math.Inf(1):            "inf",
		math.Inf(-1):           "-inf",
		123456789012345678:     "123456789012345680",
		1.7976931348623157e308: "1.7976931348623157e+308",
	}
	for f, want := range cases {
		if got := FormatFloat(f); got != want {
			t.Errorf("FormatFloat(%v) = %q, want %q", f, got, want)
		}
	}
}
