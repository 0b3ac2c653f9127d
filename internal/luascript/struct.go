package luascript

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// struct is Roberto Ierusalimschy's struct library as Redis bundles it:
// pack, unpack and size over a format of > < ![n] x b B h H l L T i[n]
// I[n] c[n] s f d (native sizes of x86-64: short 2, long 8, size_t 8,
// int 4; little-endian and alignment 1 by default).

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
)

type structHeader struct {
	big   bool
	align int
}

// order is the byte order of the header's floats ('>' big; '<' and the
// default little).
func (h structHeader) order() binary.ByteOrder {
	if h.big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// argError raises Lua's "bad argument #n to 'f' (msg)".
func argError(L *lua.LState, n int, fname, msg string) {
	L.RaiseError("bad argument #%d to '%s' (%s)", n, fname, msg)
}

// raiseDecodeErr, deferred by a decoder that panics with its error type
// E on bad input, raises that error as the script's Lua error; any other
// panic goes on.
func raiseDecodeErr[E ~string](L *lua.LState) {
	if r := recover(); r != nil {
		if e, ok := r.(E); ok {
			L.RaiseError("%s", string(e))
			return
		}
		panic(r)
	}
}

func structNum(L *lua.LState, f string, i *int, df int) int {
	if *i >= len(f) || f[*i] < '0' || f[*i] > '9' {
		return df
	}
	a := 0
	for *i < len(f) && f[*i] >= '0' && f[*i] <= '9' {
		if a > (math.MaxInt32/10) || a*10 > math.MaxInt32-int(f[*i]-'0') {
			L.RaiseError("integral size overflow")
		}
		a = a*10 + int(f[*i]-'0')
		*i++
	}
	return a
}

func structOptSize(L *lua.LState, opt byte, f string, i *int) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return structNum(L, f, i, 1)
	case 'i', 'I':
		sz := structNum(L, f, i, 4)
		if sz > structMaxIntSize {
			L.RaiseError("integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

func structToAlign(n int, h *structHeader, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

func structControl(L *lua.LState, fname string, opt byte, f string, i *int, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.big = true
	case '<':
		h.big = false
	case '!':
		a := structNum(L, f, i, structMaxAlign)
		if a == 0 || a&(a-1) != 0 {
			L.RaiseError("alignment %d is not a power of 2", a)
		}
		h.align = a
	default:
		argError(L, 1, fname, fmt.Sprintf("invalid format option '%c'", opt))
	}
}

func (st *state) structLib() *lua.LTable {
	L := st.L
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

func checkNumber(L *lua.LState, n int, fname string) float64 {
	switch v := L.Get(n).(type) {
	case lua.LNumber:
		return float64(v)
	case lua.LString:
		if f, err := parseLuaNumber(string(v)); err == nil {
			return f
		}
	}
	argError(L, n, fname, "number expected, got "+typeName(L.Get(n)))
	return 0
}

func checkString(L *lua.LState, n int, fname string) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return fmtNumber(float64(v))
	}
	argError(L, n, fname, "string expected, got "+typeName(L.Get(n)))
	return ""
}

func typeName(v lua.LValue) string {
	if v == lua.LNil {
		return "no value"
	}
	return v.Type().String()
}

func structPack(L *lua.LState) int {
	f := checkString(L, 1, "pack")
	h := structHeader{align: 1}
	arg := 2
	var b strings.Builder
	total := 0
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		toalign := structToAlign(total, &h, opt, size)
		total += toalign
		for ; toalign > 0; toalign-- {
			b.WriteByte(0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := checkNumber(L, arg, "pack")
			arg++
			var v uint64
			if n < 0 {
				v = uint64(toInt(n))
			} else if n >= 18446744073709551616 {
				v = 1 << 63
			} else {
				v = uint64(n)
			}
			buf := make([]byte, size)
			if h.big {
				for j := size - 1; j >= 0; j-- {
					buf[j] = byte(v)
					v >>= 8
				}
			} else {
				for j := 0; j < size; j++ {
					buf[j] = byte(v)
					v >>= 8
				}
			}
			b.Write(buf)
		case 'x':
			b.WriteByte(0)
		case 'f':
			var buf [4]byte
			h.order().PutUint32(buf[:], math.Float32bits(float32(checkNumber(L, arg, "pack"))))
			arg++
			b.Write(buf[:])
		case 'd':
			var buf [8]byte
			h.order().PutUint64(buf[:], math.Float64bits(checkNumber(L, arg, "pack")))
			arg++
			b.Write(buf[:])
		case 'c', 's':
			s := checkString(L, arg, "pack")
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				argError(L, arg, "pack", "string too short")
			}
			b.WriteString(s[:size])
			if opt == 's' {
				b.WriteByte(0)
				size++
			}
		default:
			structControl(L, "pack", opt, f, &i, &h)
		}
		total += size
	}
	L.Push(lua.LString(b.String()))
	return 1
}

func structUnpack(L *lua.LState) int {
	f := checkString(L, 1, "unpack")
	data := checkString(L, 2, "unpack")
	pos := 1
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		pos = int(toInt(checkNumber(L, 3, "unpack")))
	}
	if pos <= 0 {
		argError(L, 3, "unpack", "offset must be 1 or greater")
	}
	pos--
	ld := len(data)
	h := structHeader{align: 1}
	var res []lua.LValue
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		if !(size <= ld && pos <= ld-size) {
			argError(L, 2, "unpack", "data string too short")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			var l uint64
			if h.big {
				for j := 0; j < size; j++ {
					l = l<<8 | uint64(data[pos+j])
				}
			} else {
				for j := size - 1; j >= 0; j-- {
					l = l<<8 | uint64(data[pos+j])
				}
			}
			if opt >= 'a' {
				if size*8-1 < 64 {
					mask := ^uint64(0) << uint(size*8-1)
					if l&mask != 0 {
						l |= mask
					}
				}
				res = append(res, lua.LNumber(float64(int64(l))))
			} else {
				res = append(res, lua.LNumber(float64(l)))
			}
		case 'x':
		case 'f':
			v := h.order().Uint32([]byte(data[pos : pos+4]))
			res = append(res, lua.LNumber(float64(math.Float32frombits(v))))
		case 'd':
			v := h.order().Uint64([]byte(data[pos : pos+8]))
			res = append(res, lua.LNumber(math.Float64frombits(v)))
		case 'c':
			if size == 0 {
				var prev lua.LNumber
				ok := false
				if len(res) > 0 {
					prev, ok = res[len(res)-1].(lua.LNumber)
				}
				if !ok {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(prev)
				res = res[:len(res)-1]
				if !(size >= 0 && size <= ld && pos <= ld-size) {
					argError(L, 2, "unpack", "data string too short")
				}
			}
			res = append(res, lua.LString(data[pos:pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = e + 1
			res = append(res, lua.LString(data[pos:pos+e]))
		default:
			structControl(L, "unpack", opt, f, &i, &h)
		}
		pos += size
	}
	for _, v := range res {
		L.Push(v)
	}
	L.Push(lua.LNumber(pos + 1))
	return len(res) + 1
}

func structSize(L *lua.LState) int {
	f := checkString(L, 1, "size")
	h := structHeader{align: 1}
	pos := 0
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		if opt == 's' {
			argError(L, 1, "size", "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			argError(L, 1, "size", "option 'c0' has no fixed size")
		}
		if !(opt >= 'a' && opt <= 'z' || opt >= 'A' && opt <= 'Z' || opt >= '0' && opt <= '9') {
			structControl(L, "size", opt, f, &i, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
