package luascript

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/tairkv/tair/resp"
)

var errShort = errors.New("short reply")

// fromRESP converts one RESP reply to a Lua value as Redis does:
// integer → number, bulk → string, null → false (RESP3 null: nil),
// array → table, status → {ok=...}, error → {err=...}; with RESP3 replies
// map → {map={...}}, set → {set={k=true}}, double → {double=n}, boolean
// → boolean, big number → {big_number=s}, verbatim →
// {verbatim_string={format=f, string=s}}. It returns the bytes used.
func (st *state) fromRESP(L *lua.LState, b []byte) (lua.LValue, int, error) {
	if len(b) == 0 {
		return lua.LNil, 0, errShort
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return lua.LNil, 0, errShort
	}
	line := string(b[1:i])
	n := i + 2
	switch b[0] {
	case '+':
		// Tables of one field are made for their size: NewTable's
		// default room (32 slots and a map) was most of what a short
		// script allocated.
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(line))
		return t, n, nil
	case '-':
		return errorTable(L, "-"+line), n, nil
	case ':':
		v, err := strconv.ParseInt(line, 10, 64)
		return lua.LNumber(v), n, err
	case '$', '=':
		l, err := strconv.Atoi(line)
		if err != nil {
			return lua.LNil, 0, err
		}
		if l < 0 {
			return lua.LFalse, n, nil
		}
		if len(b) < n+l+2 {
			return lua.LNil, 0, errShort
		}
		s := string(b[n : n+l])
		if b[0] == '=' {
			t, v := L.CreateTable(0, 1), L.CreateTable(0, 2)
			format, str := "txt", s
			if len(s) >= 4 && s[3] == ':' {
				format, str = s[:3], s[4:]
			}
			v.RawSetString("format", lua.LString(format))
			v.RawSetString("string", lua.LString(str))
			t.RawSetString("verbatim_string", v)
			return t, n + l + 2, nil
		}
		return lua.LString(s), n + l + 2, nil
	case '*', '~', '%', '>':
		c, err := strconv.Atoi(line)
		if err != nil {
			return lua.LNil, 0, err
		}
		if c < 0 {
			return lua.LFalse, n, nil
		}
		inner := L.CreateTable(c, 0)
		items := c
		if b[0] == '%' {
			items = 2 * c
			inner = L.CreateTable(0, c)
		}
		var k lua.LValue
		for j := 0; j < items; j++ {
			v, m, err := st.fromRESP(L, b[n:])
			if err != nil {
				return lua.LNil, 0, err
			}
			n += m
			switch b[0] {
			case '*', '>':
				inner.RawSetInt(j+1, v)
			case '~':
				inner.RawSet(v, lua.LTrue)
			case '%':
				if j%2 == 0 {
					k = v
				} else {
					inner.RawSet(k, v)
				}
			}
		}
		switch b[0] {
		case '~':
			t := L.CreateTable(0, 1)
			t.RawSetString("set", inner)
			return t, n, nil
		case '%':
			t := L.CreateTable(0, 1)
			t.RawSetString("map", inner)
			return t, n, nil
		}
		return inner, n, nil
	case '_':
		return lua.LNil, n, nil
	case '#':
		return lua.LBool(line == "t"), n, nil
	case ',':
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(parseDouble(line)))
		return t, n, nil
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, n, nil
	}
	return lua.LNil, 0, errors.New("unknown reply type")
}

func parseDouble(s string) float64 {
	switch s {
	case "inf":
		return math.Inf(1)
	case "-inf":
		return math.Inf(-1)
	case "nan", "-nan":
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// maxDepth bounds the nesting of a script's reply (a table that holds
// itself).
const maxDepth = 1000

// toInt is C's (long long) cast of a Lua number as Redis's x86-64
// builds do it: truncation, and the minimum for what does not fit.
func toInt(f float64) int64 {
	if f != f || f >= 9223372036854775807 || f < -9223372036854775808 {
		return math.MinInt64
	}
	return int64(f)
}

// toRESP appends v as Redis's reply to the client (luaReplyToRedisReply):
// number → integer (truncated), string → bulk, true → 1 (RESP3 script:
// boolean), false and nil → null, tables by their err/ok/double/
// big_number/map/set/verbatim_string field, else an array up to the
// first nil.
func (st *state) toRESP(out []byte, v lua.LValue, depth int) []byte {
	proto := st.run.Proto
	if depth > maxDepth {
		return resp.AppendError(out, "ERR reached lua stack limit")
	}
	switch x := v.(type) {
	case lua.LString:
		return resp.AppendBulkString(out, string(x))
	case lua.LNumber:
		return resp.AppendInt(out, toInt(float64(x)))
	case lua.LBool:
		if st.resp == 3 {
			return appendBool(out, bool(x), proto)
		}
		if x {
			return resp.AppendInt(out, 1)
		}
		return resp.AppendNull(out, proto)
	case *lua.LTable:
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			return appendError(out, string(e))
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			return resp.AppendStatus(out, sanitize(string(s)))
		}
		if d, ok := x.RawGetString("double").(lua.LNumber); ok {
			return appendDouble(out, float64(d), proto)
		}
		if s, ok := x.RawGetString("big_number").(lua.LString); ok {
			if proto == 3 {
				return append(append(append(out, '('), sanitize(string(s))...), '\r', '\n')
			}
			return resp.AppendBulkString(out, string(s))
		}
		if m, ok := x.RawGetString("map").(*lua.LTable); ok {
			var keys, vals []lua.LValue
			m.ForEach(func(k, v lua.LValue) { keys, vals = append(keys, k), append(vals, v) })
			if proto == 3 {
				out = append(out, '%')
				out = strconv.AppendInt(out, int64(len(keys)), 10)
				out = append(out, '\r', '\n')
			} else {
				out = resp.AppendArray(out, 2*len(keys))
			}
			for i := range keys {
				out = st.toRESP(out, keys[i], depth+1)
				out = st.toRESP(out, vals[i], depth+1)
			}
			return out
		}
		if s, ok := x.RawGetString("set").(*lua.LTable); ok {
			var keys []lua.LValue
			s.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
			if proto == 3 {
				out = append(out, '~')
				out = strconv.AppendInt(out, int64(len(keys)), 10)
				out = append(out, '\r', '\n')
			} else {
				out = resp.AppendArray(out, len(keys))
			}
			for _, k := range keys {
				out = st.toRESP(out, k, depth+1)
			}
			return out
		}
		if vs, ok := x.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, _ := vs.RawGetString("format").(lua.LString)
			s, _ := vs.RawGetString("string").(lua.LString)
			if proto == 3 {
				body := string(f) + ":" + string(s)
				out = append(out, '=')
				out = strconv.AppendInt(out, int64(len(body)), 10)
				out = append(out, '\r', '\n')
				out = append(out, body...)
				return append(out, '\r', '\n')
			}
			return resp.AppendBulkString(out, string(s))
		}
		n := 0
		for x.RawGetInt(n+1) != lua.LNil {
			n++
		}
		out = resp.AppendArray(out, n)
		for i := 1; i <= n; i++ {
			out = st.toRESP(out, x.RawGetInt(i), depth+1)
		}
		return out
	}
	return resp.AppendNull(out, proto)
}

func sanitize(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return s
}

// appendError appends an error reply with text as Redis's
// addReplyErrorFormat writes it (newlines become spaces).
func appendError(out []byte, text string) []byte {
	out = append(out, '-')
	out = append(out, sanitize(text)...)
	return append(out, '\r', '\n')
}

func appendBool(out []byte, b bool, proto int) []byte {
	if proto == 3 {
		if b {
			return append(out, "#t\r\n"...)
		}
		return append(out, "#f\r\n"...)
	}
	if b {
		return resp.AppendInt(out, 1)
	}
	return resp.AppendInt(out, 0)
}

func appendDouble(out []byte, d float64, proto int) []byte {
	s := resp.FormatFloat(d)
	if proto == 3 {
		switch {
		case math.IsInf(d, 1):
			s = "inf"
		case math.IsInf(d, -1):
			s = "-inf"
		case d != d:
			s = "nan"
		}
		return append(append(append(out, ','), s...), '\r', '\n')
	}
	return resp.AppendBulkString(out, s)
}
