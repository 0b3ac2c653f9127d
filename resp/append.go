// Package resp writes and reads the Redis protocol (RESP2 and RESP3). The
// Append* helpers add one reply to a byte slice; they are what dataservers
// and proxies build replies with. Errors from internal/errs become RESP
// text here and nowhere else (AppendErr).
package resp

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/tairkv/tair/internal/errs"
)

// AppendOK appends +OK.
func AppendOK(b []byte) []byte { return append(b, "+OK\r\n"...) }

// AppendStatus appends a simple string (+s).
func AppendStatus(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, cleanLine(s)...)
	return append(b, '\r', '\n')
}

// AppendError appends an error (-msg); msg should start with its prefix
// ("ERR ...", "WRONGTYPE ...").
func AppendError(b []byte, msg string) []byte {
	b = append(b, '-')
	b = append(b, cleanLine(msg)...)
	return append(b, '\r', '\n')
}

// AppendErr appends err as an error reply: an *errs.Error with its Tair
// prefix and code, anything else as "ERR <text>".
func AppendErr(b []byte, err error) []byte {
	var e *errs.Error
	if errors.As(err, &e) {
		return AppendError(b, e.RESP())
	}
	return AppendError(b, "ERR "+err.Error())
}

// AppendInt appends an integer (:n).
func AppendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends a bulk string.
func AppendBulk(b []byte, v []byte) []byte { return appendBulk(b, v) }

// AppendBulkString appends a bulk string.
func AppendBulkString(b []byte, v string) []byte { return appendBulk(b, v) }

func appendBulk[T []byte | string](b []byte, v T) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// AppendBulkInt appends n as a bulk string.
func AppendBulkInt(b []byte, n int64) []byte {
	var buf [24]byte
	return AppendBulk(b, strconv.AppendInt(buf[:0], n, 10))
}

// AppendNull appends the null reply: $-1 in RESP2, _ in RESP3.
func AppendNull(b []byte, proto int) []byte {
	if proto >= 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "$-1\r\n"...)
}

// AppendNullArray appends a null array: *-1 in RESP2, _ in RESP3.
func AppendNullArray(b []byte, proto int) []byte {
	if proto >= 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "*-1\r\n"...)
}

// AppendArray appends an array header of n elements.
func AppendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendMap appends a map header of n pairs: %n in RESP3, an array of 2n
// elements in RESP2.
func AppendMap(b []byte, n int, proto int) []byte {
	if proto >= 3 {
		b = append(b, '%')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return AppendArray(b, 2*n)
}

// AppendSet appends a set header: ~n in RESP3, an array in RESP2.
func AppendSet(b []byte, n int, proto int) []byte {
	if proto >= 3 {
		b = append(b, '~')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return AppendArray(b, n)
}

// AppendDouble appends a float: ,f in RESP3, a bulk string in RESP2, both
// formatted as Redis 7 does (shortest round-trip digits, inf/-inf).
func AppendDouble(b []byte, f float64, proto int) []byte {
	s := FormatFloat(f)
	if proto >= 3 {
		b = append(b, ',')
		b = append(b, s...)
		return append(b, '\r', '\n')
	}
	return AppendBulkString(b, s)
}

// AppendBool appends a boolean: #t/#f in RESP3, :1/:0 in RESP2.
func AppendBool(b []byte, v bool, proto int) []byte {
	if proto >= 3 {
		if v {
			return append(b, "#t\r\n"...)
		}
		return append(b, "#f\r\n"...)
	}
	if v {
		return AppendInt(b, 1)
	}
	return AppendInt(b, 0)
}

// AppendVerbatim appends a verbatim string (=len txt:...) in RESP3, a bulk
// string in RESP2 (INFO, CLIENT LIST use it).
func AppendVerbatim(b []byte, s string, proto int) []byte {
	if proto >= 3 {
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(len(s)+4), 10)
		b = append(b, "\r\ntxt:"...)
		b = append(b, s...)
		return append(b, '\r', '\n')
	}
	return AppendBulkString(b, s)
}

// AppendCommand appends args as a RESP array of bulk strings (a request).
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = AppendArray(b, len(args))
	for _, a := range args {
		b = AppendBulk(b, a)
	}
	return b
}

// FormatFloat formats f the way Redis 7.2 replies with doubles (d2string):
// a whole number within ±2^62 as an integer ("1000000", where the
// shortest %g form would say "1e+06"), zero with its sign, anything else
// in the shortest form that reads back the same.
func FormatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		if math.Signbit(f) {
			return "-0"
		}
		return "0"
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		// Redis's double2ll: within LLONG_MAX/2 the cast is exact.
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func cleanLine(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return s
}
