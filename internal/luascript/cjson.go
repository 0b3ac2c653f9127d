package luascript

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// cjson as Redis bundles it (lua-cjson 2.1.0 with Redis's defaults):
// numbers with 14 significant digits, "/" escaped, an empty table
// encoded as {}, arrays with holes as null up to a sparse ratio of 2
// (past 10 elements), JSON null decoded as cjson.null.

const (
	cjsonMaxDepth     = 1000
	cjsonSparseRatio  = 2
	cjsonSparseSafe   = 10
	cjsonEncodePrecis = 14
)

func (st *state) cjsonLib() *lua.LTable {
	L := st.L
	t := L.NewTable()
	st.null = L.NewUserData()
	t.RawSetString("null", st.null)
	t.RawSetString("encode", L.NewFunction(st.cjsonEncode))
	t.RawSetString("decode", L.NewFunction(st.cjsonDecode))
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

func (st *state) cjsonEncode(L *lua.LState) int {
	if L.GetTop() != 1 {
		argError(L, 1, "encode", "expected 1 argument")
	}
	var b strings.Builder
	if msg := st.jsonAppend(&b, L.Get(1), 0); msg != "" {
		L.RaiseError("%s", msg)
	}
	L.Push(lua.LString(b.String()))
	return 1
}

func (st *state) jsonAppend(b *strings.Builder, v lua.LValue, depth int) string {
	switch x := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case lua.LNumber:
		f := float64(x)
		if math.IsInf(f, 0) || f != f {
			return "Cannot serialise number: must not be NaN or Inf"
		}
		b.WriteString(strconv.FormatFloat(f, 'g', cjsonEncodePrecis, 64))
	case lua.LString:
		jsonString(b, string(x))
	case *lua.LUserData:
		if x == st.null {
			b.WriteString("null")
			return ""
		}
		return "Cannot serialise userdata: type not supported"
	case *lua.LTable:
		depth++
		if depth > cjsonMaxDepth {
			return fmt.Sprintf("Cannot serialise, excessive nesting (%d)", depth)
		}
		n, ok := arrayLength(x)
		if !ok {
			return "Cannot serialise table: excessively sparse array"
		}
		if n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if msg := st.jsonAppend(b, x.RawGetInt(i), depth); msg != "" {
					return msg
				}
			}
			b.WriteByte(']')
			return ""
		}
		b.WriteByte('{')
		first := true
		var msg string
		x.ForEach(func(k, val lua.LValue) {
			if msg != "" {
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			switch kk := k.(type) {
			case lua.LString:
				jsonString(b, string(kk))
			case lua.LNumber:
				b.WriteByte('"')
				b.WriteString(strconv.FormatFloat(float64(kk), 'g', cjsonEncodePrecis, 64))
				b.WriteByte('"')
			default:
				msg = "Cannot serialise " + k.Type().String() + ": table key must be a number or string"
				return
			}
			b.WriteByte(':')
			msg = st.jsonAppend(b, val, depth)
		})
		if msg != "" {
			return msg
		}
		b.WriteByte('}')
	default:
		return "Cannot serialise " + v.Type().String() + ": type not supported"
	}
	return ""
}

// arrayLength is lua-cjson's lua_array_length: the largest key when
// every key is a positive integer (0 for an object or an empty table),
// false for an array too sparse to encode.
func arrayLength(t *lua.LTable) (int, bool) {
	max, items := 0, 0
	object := false
	t.ForEach(func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
			object = true
			return
		}
		if int(n) > max {
			max = int(n)
		}
		items++
	})
	if object {
		return 0, true
	}
	if max > cjsonSparseSafe && max > items*cjsonSparseRatio {
		return 0, false
	}
	return max, true
}

func jsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// jsonDecoder is lua-cjson's decoder: its token names and error texts.
type jsonDecoder struct {
	st    *state
	L     *lua.LState
	s     string
	i     int
	depth int
}

type jsonErr string

func (st *state) cjsonDecode(L *lua.LState) (n int) {
	if L.GetTop() != 1 {
		argError(L, 1, "decode", "expected 1 argument")
	}
	s := checkString(L, 1, "decode")
	d := &jsonDecoder{st: st, L: L, s: s}
	defer raiseDecodeErr[jsonErr](L)
	tok := d.next()
	v := d.value(tok)
	end := d.next()
	if end.typ != "T_END" {
		d.fail("the end", end)
	}
	L.Push(v)
	return 1
}

type jsonToken struct {
	typ string
	pos int // 0-based start
	str string
	num float64
	err string
}

func (d *jsonDecoder) fail(expected string, t jsonToken) {
	found := t.typ
	if t.typ == "T_ERROR" {
		found = t.err
	}
	panic(jsonErr(fmt.Sprintf("Expected %s but found %s at character %d", expected, found, t.pos+1)))
}

func (d *jsonDecoder) next() jsonToken {
	for d.i < len(d.s) && strings.IndexByte(" \t\n\r", d.s[d.i]) >= 0 {
		d.i++
	}
	t := jsonToken{pos: d.i}
	if d.i >= len(d.s) {
		t.typ = "T_END"
		return t
	}
	c := d.s[d.i]
	single := map[byte]string{'{': "T_OBJ_BEGIN", '}': "T_OBJ_END", '[': "T_ARR_BEGIN", ']': "T_ARR_END", ':': "T_COLON", ',': "T_COMMA"}
	if typ, ok := single[c]; ok {
		d.i++
		t.typ = typ
		return t
	}
	switch {
	case c == '"':
		return d.str(t)
	case c == '-' || (c >= '0' && c <= '9'):
		j := d.i
		for j < len(d.s) && strings.IndexByte("+-0123456789.eE", d.s[j]) >= 0 {
			j++
		}
		f, err := strconv.ParseFloat(d.s[d.i:j], 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			t.typ, t.err = "T_ERROR", "invalid number"
			return t
		}
		d.i = j
		t.typ, t.num = "T_NUMBER", f
		return t
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		t.typ, t.num = "T_BOOLEAN", 1
		return t
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		t.typ = "T_BOOLEAN"
		return t
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += 4
		t.typ = "T_NULL"
		return t
	}
	t.typ, t.err = "T_ERROR", "invalid token"
	return t
}

func (d *jsonDecoder) str(t jsonToken) jsonToken {
	var b strings.Builder
	j := d.i + 1
	for {
		if j >= len(d.s) {
			t.typ, t.err, t.pos = "T_ERROR", "unexpected end of string", j
			return t
		}
		c := d.s[j]
		if c == '"' {
			break
		}
		if c != '\\' {
			b.WriteByte(c)
			j++
			continue
		}
		if j+1 >= len(d.s) {
			t.typ, t.err, t.pos = "T_ERROR", "unexpected end of string", j+1
			return t
		}
		e := d.s[j+1]
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, n := d.unicode(j)
			if n == 0 {
				t.typ, t.err, t.pos = "T_ERROR", "invalid unicode escape code", j
				return t
			}
			var buf [4]byte
			b.Write(buf[:utf8.EncodeRune(buf[:], r)])
			j += n
			continue
		default:
			t.typ, t.err, t.pos = "T_ERROR", "invalid escape code", j
			return t
		}
		j += 2
	}
	d.i = j + 1
	t.typ, t.str = "T_STRING", b.String()
	return t
}

// unicode decodes \uXXXX (and a surrogate pair) at j; n is the bytes
// used, 0 when invalid.
func (d *jsonDecoder) unicode(j int) (rune, int) {
	hex := func(at int) (rune, bool) {
		if at+6 > len(d.s) || d.s[at] != '\\' || d.s[at+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(d.s[at+2:at+6], 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex(j)
	if !ok {
		return 0, 0
	}
	if r >= 0xd800 && r <= 0xdbff {
		lo, ok := hex(j + 6)
		if !ok || lo < 0xdc00 || lo > 0xdfff {
			return 0, 0
		}
		return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12
	}
	if r >= 0xdc00 && r <= 0xdfff {
		return 0, 0
	}
	return r, 6
}

func (d *jsonDecoder) value(t jsonToken) lua.LValue {
	L := d.L
	switch t.typ {
	case "T_STRING":
		return lua.LString(t.str)
	case "T_NUMBER":
		return lua.LNumber(t.num)
	case "T_BOOLEAN":
		return lua.LBool(t.num == 1)
	case "T_NULL":
		return d.st.null
	case "T_OBJ_BEGIN":
		tb := L.NewTable()
		d.members(t, "T_OBJ_END", "comma or object end", func(k jsonToken) {
			if k.typ != "T_STRING" {
				d.fail("object key string", k)
			}
			if c := d.next(); c.typ != "T_COLON" {
				d.fail("colon", c)
			}
			tb.RawSetString(k.str, d.value(d.next()))
		})
		return tb
	case "T_ARR_BEGIN":
		tb := L.NewTable()
		i := 0
		d.members(t, "T_ARR_END", "comma or array end", func(v jsonToken) {
			i++
			tb.RawSetInt(i, d.value(v))
		})
		return tb
	}
	d.fail("value", t)
	return lua.LNil
}

// members reads an object's or an array's members after its opening
// token open, each by member (given the member's first token), up to
// the closing token end; what is the error's expectation when a member
// is followed by neither a comma nor end.
func (d *jsonDecoder) members(open jsonToken, end, what string, member func(first jsonToken)) {
	d.nest(open)
	if t := d.next(); t.typ != end {
		for {
			member(t)
			c := d.next()
			if c.typ == end {
				break
			}
			if c.typ != "T_COMMA" {
				d.fail(what, c)
			}
			t = d.next()
		}
	}
	d.depth--
}

func (d *jsonDecoder) nest(t jsonToken) {
	d.depth++
	if d.depth > cjsonMaxDepth {
		panic(jsonErr(fmt.Sprintf("Found too many nested data structures (%d) at character %d", d.depth, t.pos+1)))
	}
}
