package luascript

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// bit is LuaBitOp 1.0.2 as Redis bundles it: 32-bit operations on Lua
// numbers, results as signed 32-bit numbers.

// tobit normalises a Lua number to 32 bits as LuaBitOp does (adding
// 2^52+2^51 rounds to nearest, ties to even, and keeps the low 32 bits).
func tobit(f float64) int32 {
	r := math.RoundToEven(f)
	m := math.Mod(r, 4294967296)
	if m < 0 {
		m += 4294967296
	}
	return int32(uint32(m))
}

func (st *state) bitLib() *lua.LTable {
	L := st.L
	t := L.NewTable()
	var fname string
	arg := func(L *lua.LState, i int) int32 { return tobit(checkNumber(L, i, fname)) }
	ret := func(L *lua.LState, v int32) int { L.Push(lua.LNumber(v)); return 1 }
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, arg(L, i))
			}
			return ret(L, v)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, arg(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^arg(L, 1)) },
		"band":  fold(func(a, b int32) int32 { return a & b }),
		"bor":   fold(func(a, b int32) int32 { return a | b }),
		"bxor":  fold(func(a, b int32) int32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(arg(L, 1))<<(uint32(arg(L, 2))&31)))
		},
		"rshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(arg(L, 1))>>(uint32(arg(L, 2))&31)))
		},
		"arshift": func(L *lua.LState) int {
			return ret(L, arg(L, 1)>>(uint32(arg(L, 2))&31))
		},
		"rol": func(L *lua.LState) int {
			b, n := uint32(arg(L, 1)), uint32(arg(L, 2))&31
			return ret(L, int32(b<<n|b>>((32-n)&31)))
		},
		"ror": func(L *lua.LState) int {
			b, n := uint32(arg(L, 1)), uint32(arg(L, 2))&31
			return ret(L, int32(b>>n|b<<((32-n)&31)))
		},
		"bswap": func(L *lua.LState) int {
			b := uint32(arg(L, 1))
			return ret(L, int32(b>>24|(b>>8)&0xff00|(b&0xff00)<<8|b<<24))
		},
		"tohex": func(L *lua.LState) int {
			b := uint32(arg(L, 1))
			n := int32(8)
			if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
				n = arg(L, 2)
			}
			hexd := "0123456789abcdef"
			if n < 0 {
				n = -n
				hexd = "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			var buf [8]byte
			for i := int(n) - 1; i >= 0; i-- {
				buf[i] = hexd[b&15]
				b >>= 4
			}
			L.Push(lua.LString(strings.Clone(string(buf[:n]))))
			return 1
		},
	}
	for n, f := range fns {
		t.RawSetString(n, L.NewFunction(func(L *lua.LState) int {
			fname = n
			return f(L)
		}))
	}
	return t
}
