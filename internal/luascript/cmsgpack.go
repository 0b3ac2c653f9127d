package luascript

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack is lua-cmsgpack 0.4.0 as Redis bundles it: pack(...) encodes
// each argument (tables with keys 1..n as arrays, others as maps,
// integral numbers in the smallest integer form, others as float when
// a float holds them exactly, else double; nesting past 16 as nil),
// unpack(s) decodes every object of s, unpack_one(s [, offset]) and
// unpack_limit(s, limit [, offset]) some of them, after the next offset.

const msgpackMaxNesting = 16

func (st *state) msgpackLib() *lua.LTable {
	L := st.L
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(msgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, 0, 0, false) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, 1, optOffset(L, 2), true)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, int(L.CheckNumber(2)), optOffset(L, 3), true)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	return t
}

func optOffset(L *lua.LState, n int) int {
	if L.GetTop() >= n && L.Get(n) != lua.LNil {
		return int(L.CheckNumber(n))
	}
	return 0
}

func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "pack", "MessagePack pack needs input.")
	}
	var b []byte
	for i := 1; i <= n; i++ {
		b = mpEncode(b, L.Get(i), 0)
	}
	L.Push(lua.LString(b))
	return 1
}

func mpEncode(b []byte, v lua.LValue, level int) []byte {
	switch x := v.(type) {
	case lua.LString:
		return mpBytes(b, string(x))
	case lua.LBool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if !math.IsInf(f, 0) && f == f && f >= -9223372036854775808 && f < 9223372036854775808 && float64(int64(f)) == f {
			return mpInt(b, int64(f))
		}
		if float64(float32(f)) == f {
			return binary.BigEndian.AppendUint32(append(b, 0xca), math.Float32bits(float32(f)))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
	case *lua.LTable:
		if level == msgpackMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := mpIsArray(x); ok {
			b = mpHeader(b, n, 0x90, 0xdc, 0xdd, 16)
			for i := 1; i <= n; i++ {
				b = mpEncode(b, x.RawGetInt(i), level+1)
			}
			return b
		}
		count := 0
		x.ForEach(func(_, _ lua.LValue) { count++ })
		b = mpHeader(b, count, 0x80, 0xde, 0xdf, 16)
		x.ForEach(func(k, val lua.LValue) {
			b = mpEncode(b, k, level+1)
			b = mpEncode(b, val, level+1)
		})
		return b
	}
	return append(b, 0xc0)
}

// mpIsArray: every key a positive integer and the largest one the count.
func mpIsArray(t *lua.LTable) (int, bool) {
	count, max := 0, 0
	ok := true
	t.ForEach(func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || n <= 0 || float64(n) != math.Floor(float64(n)) {
			ok = false
			return
		}
		count++
		if int(n) > max {
			max = int(n)
		}
	})
	return count, ok && max == count
}

func mpHeader(b []byte, n int, fix, b16, b32 byte, fixMax int) []byte {
	switch {
	case n < fixMax:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, b32), uint32(n))
}

func mpBytes(b []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= 0xff:
		b = append(b, 0xd9, byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func mpInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(b, byte(n))
		case n <= 0xff:
			return append(b, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= -128:
		return append(b, 0xd0, byte(int8(n)))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

type mpErr string

// msgpackUnpack decodes up to limit objects (0: all) from offset; with
// offsets it first returns the offset after them (-1 at the end).
func msgpackUnpack(L *lua.LState, limit, offset int, offsets bool) (ret int) {
	s := L.CheckString(1)
	if offset < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, limit)
	}
	if offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	defer raiseDecodeErr[mpErr](L)
	d := &mpDecoder{L: L, s: s, i: offset}
	var vals []lua.LValue
	for d.i < len(s) && (limit == 0 || len(vals) < limit) {
		vals = append(vals, d.decode())
	}
	if offsets {
		next := d.i
		if next >= len(s) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range vals {
		L.Push(v)
	}
	if offsets {
		return len(vals) + 1
	}
	return len(vals)
}

type mpDecoder struct {
	L *lua.LState
	s string
	i int
}

func (d *mpDecoder) need(n int) string {
	if len(d.s)-d.i < n {
		panic(mpErr("Missing bytes in input."))
	}
	v := d.s[d.i : d.i+n]
	d.i += n
	return v
}

func (d *mpDecoder) uint(n int) uint64 {
	b := d.need(n)
	var v uint64
	for i := 0; i < n; i++ {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func (d *mpDecoder) decode() lua.LValue {
	c := d.need(1)[0]
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(d.need(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return d.array(int(c & 0x0f))
	case c&0xf0 == 0x80:
		return d.table(int(c & 0x0f))
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc, 0xcd, 0xce, 0xcf:
		return lua.LNumber(float64(d.uint(1 << (c - 0xcc))))
	case 0xd0:
		return lua.LNumber(int8(d.uint(1)))
	case 0xd1:
		return lua.LNumber(int16(d.uint(2)))
	case 0xd2:
		return lua.LNumber(int32(d.uint(4)))
	case 0xd3:
		return lua.LNumber(float64(int64(d.uint(8))))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.uint(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.uint(8)))
	case 0xd9:
		return lua.LString(d.need(int(d.uint(1))))
	case 0xda:
		return lua.LString(d.need(int(d.uint(2))))
	case 0xdb:
		return lua.LString(d.need(int(d.uint(4))))
	case 0xdc:
		return d.array(int(d.uint(2)))
	case 0xdd:
		return d.array(int(d.uint(4)))
	case 0xde:
		return d.table(int(d.uint(2)))
	case 0xdf:
		return d.table(int(d.uint(4)))
	}
	panic(mpErr("Bad data format in input."))
}

func (d *mpDecoder) array(n int) lua.LValue {
	if n > len(d.s)-d.i {
		panic(mpErr("Missing bytes in input."))
	}
	t := d.L.CreateTable(n, 0)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, d.decode())
	}
	return t
}

func (d *mpDecoder) table(n int) lua.LValue {
	if n > len(d.s)-d.i {
		panic(mpErr("Missing bytes in input."))
	}
	t := d.L.CreateTable(0, n)
	for i := 0; i < n; i++ {
		k := d.decode()
		v := d.decode()
		if k == lua.LNil {
			continue
		}
		t.RawSet(k, v)
	}
	return t
}

// parseLuaNumber is Lua 5.1's string to number (strtod, or hex).
func parseLuaNumber(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if h, ok := strings.CutPrefix(strings.ToLower(t), "0x"); ok {
		v, err := strconv.ParseUint(h, 16, 64)
		return float64(v), err
	}
	return strconv.ParseFloat(t, 64)
}
