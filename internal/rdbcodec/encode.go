package rdbcodec

import (
	"encoding/binary"
	"math"

	"github.com/tairkv/tair/internal/redisnum"
)

// listpackNodeBytes is the size a quicklist node's listpack is kept
// under, as Redis's list-max-listpack-size -2 (8 KiB) does.
const listpackNodeBytes = 8 << 10

type encoder struct{ b []byte }

// length writes an RDB length (rdbSaveLen).
func (e *encoder) length(n uint64) {
	switch {
	case n < 1<<6:
		e.b = append(e.b, byte(n))
	case n < 1<<14:
		e.b = append(e.b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		e.b = append(e.b, len32bit)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	default:
		e.b = append(e.b, len64bit)
		e.b = binary.BigEndian.AppendUint64(e.b, n)
	}
}

// raw writes s as an RDB string: LZF-compressed when it is over 20 bytes
// and compresses (as Redis with rdbcompression yes), else plain.
func (e *encoder) raw(s []byte) {
	if len(s) > 20 {
		if c := lzfCompress(s); c != nil {
			e.b = append(e.b, 0xc0|encLZF)
			e.length(uint64(len(c)))
			e.length(uint64(len(s)))
			e.b = append(e.b, c...)
			return
		}
	}
	e.length(uint64(len(s)))
	e.b = append(e.b, s...)
}

// str writes s as Redis's rdbSaveRawString does: an integer encoding for
// the canonical decimal of an int32, else raw.
func (e *encoder) str(s []byte) {
	if len(s) <= 11 {
		if v, ok := redisnum.ParseInt(s); ok && v >= math.MinInt32 && v <= math.MaxInt32 {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				e.b = append(e.b, 0xc0|encInt8, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				e.b = append(e.b, 0xc0|encInt16)
				e.b = binary.LittleEndian.AppendUint16(e.b, uint16(v))
			default:
				e.b = append(e.b, 0xc0|encInt32)
				e.b = binary.LittleEndian.AppendUint32(e.b, uint32(v))
			}
			return
		}
	}
	e.raw(s)
}

func (e *encoder) object(v Value) {
	switch v.Kind {
	case String:
		e.b = append(e.b, typeString)
		e.str(v.Str)
	case List:
		e.b = append(e.b, typeListQuicklist2)
		nodes := listpackNodes(v.Elems)
		e.length(uint64(len(nodes)))
		for _, lp := range nodes {
			e.length(quicklistNodePacked)
			e.raw(lp)
		}
	case Set:
		e.b = append(e.b, typeSet)
		e.length(uint64(len(v.Elems)))
		for _, m := range v.Elems {
			e.str(m)
		}
	case ZSet:
		e.b = append(e.b, typeZSet2)
		e.length(uint64(len(v.Elems)))
		for i, m := range v.Elems {
			e.str(m)
			e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v.Scores[i]))
		}
	case Stream:
		e.stream(v.Stream)
	case Hash:
		e.b = append(e.b, typeHash)
		e.length(uint64(len(v.Elems) / 2))
		for _, s := range v.Elems[:len(v.Elems)/2*2] {
			e.str(s)
		}
	}
}

// listpackNodes packs elems into listpacks of at most listpackNodeBytes
// each (a larger element gets a node of its own).
func listpackNodes(elems [][]byte) [][]byte {
	var nodes [][]byte
	var cur []byte
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		cur = append(cur, 0xff)
		binary.LittleEndian.PutUint32(cur, uint32(len(cur)))
		if n > 0xfffe {
			n = 0xffff
		}
		binary.LittleEndian.PutUint16(cur[4:], uint16(n))
		nodes = append(nodes, cur)
		cur, n = nil, 0
	}
	for _, el := range elems {
		entry := appendListpackEntry(nil, el)
		if n > 0 && len(cur)+len(entry)+1 > listpackNodeBytes {
			flush()
		}
		if n == 0 {
			cur = make([]byte, 6, 6+len(entry)+1)
		}
		cur = append(cur, entry...)
		n++
	}
	flush()
	return nodes
}

// appendListpackEntry appends s's listpack entry (encoding, data,
// backlen), integers in their integer encodings as lpAppend makes them.
func appendListpackEntry(b, s []byte) []byte {
	start := len(b)
	if v, ok := redisnum.ParseInt(s); ok {
		switch {
		case v >= 0 && v <= 127:
			b = append(b, byte(v))
		case v >= -4096 && v <= 4095:
			u := uint16(v) & 0x1fff
			b = append(b, 0xc0|byte(u>>8), byte(u))
		case v >= math.MinInt16 && v <= math.MaxInt16:
			b = append(b, 0xf1)
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		case v >= -1<<23 && v < 1<<23:
			u := uint32(v)
			b = append(b, 0xf2, byte(u), byte(u>>8), byte(u>>16))
		case v >= math.MinInt32 && v <= math.MaxInt32:
			b = append(b, 0xf3)
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		default:
			b = append(b, 0xf4)
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	} else {
		switch n := len(s); {
		case n < 64:
			b = append(b, 0x80|byte(n))
		case n < 4096:
			b = append(b, 0xe0|byte(n>>8), byte(n))
		default:
			b = append(b, 0xf0)
			b = binary.LittleEndian.AppendUint32(b, uint32(n))
		}
		b = append(b, s...)
	}
	return appendBacklen(b, len(b)-start)
}

// backlenSize is the size of lpEncodeBacklen(l).
func backlenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// appendBacklen appends lpEncodeBacklen(l).
func appendBacklen(b []byte, l int) []byte {
	n := backlenSize(l)
	for i := n - 1; i >= 0; i-- {
		c := byte(l>>(7*i)) & 127
		if i != n-1 {
			c |= 128
		}
		b = append(b, c)
	}
	return b
}
