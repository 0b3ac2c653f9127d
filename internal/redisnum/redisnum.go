// Package redisnum parses numbers: client arguments exactly as Redis does
// (string2ll, string2d), for the dataservers' commands and the proxy's own
// computations alike, so that what one accepts the other accepts; and the
// cluster's own wire decimals (ParseUint).
package redisnum

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// ParseInt parses b as Redis's string2ll does: optional '-', no '+', no
// spaces, no leading zeros, within int64.
func ParseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		d := b[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(d-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseFloat parses b as Redis's string2d does (strtod, no spaces, no NaN).
func ParseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || isSpace(b[0]) {
		return 0, false
	}
	if bytes.IndexByte(b, '_') >= 0 {
		return 0, false // Go takes digit separators, strtod does not
	}
	s := string(b)
	hex := false
	if h := strings.TrimLeft(s, "+-"); len(h) > 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') {
		hex = true
		if !strings.ContainsAny(h, "pP") {
			s += "p0" // strtod takes a hex float without an exponent, Go does not
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false // includes ERANGE, which string2d rejects
	}
	if f == 0 && nonZeroMantissa(s, hex) {
		return 0, false // underflow to zero: ERANGE too
	}
	return f, true
}

// nonZeroMantissa reports whether the mantissa of a float's text has a
// non-zero digit (so that a zero result is an underflow).
func nonZeroMantissa(s string, hex bool) bool {
	if hex {
		s = strings.TrimLeft(s, "+-")[2:]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case !hex && (c == 'e' || c == 'E'), hex && (c == 'p' || c == 'P'):
			return false
		case c >= '1' && c <= '9', hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
			return true
		}
	}
	return false
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// ParseUint parses the cluster's own decimals (an envelope's area and
// table version, a replication item's sequence): digits only, at most 19
// (so no overflow), without allocating. Not a Redis rule: clients' numbers
// go through ParseInt.
func ParseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
